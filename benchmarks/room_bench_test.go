package benchmarks

import (
	"context"
	"runtime"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fsctl/fsctl/internal/checkout/room"
	"github.com/fsctl/fsctl/internal/contract/sale"
	"github.com/fsctl/fsctl/internal/harness/testenv"
)

// roomPolled is how many waiters BenchmarkRoomPoll spreads its polls over.
const roomPolled = 10_000

// benchRoom configures an open FIFO room under a fresh sale id (the Redis server is shared), on a
// client with a connection for every contender, and deletes it when the benchmark ends.
func benchRoom(b *testing.B, cfg sale.Room) (*room.Store, string) {
	b.Helper()
	rdb := contenderClient(b)
	ctx := context.Background()
	s := room.New(rdb)
	if err := s.LoadScripts(ctx); err != nil {
		b.Fatal(err)
	}
	id := testenv.ID(b, "bench-room")
	b.Cleanup(func() {
		if err := s.Reset(context.Background(), id); err != nil {
			b.Errorf("reset: %v", err)
		}
	})
	cfg.FairStart = sale.FairStartFIFO
	if err := s.Configure(ctx, id, cfg, time.Now().Add(-time.Minute), 0); err != nil {
		b.Fatal(err)
	}
	return s, id
}

// runRoomContended runs op with the same parallelism as the reserve benchmarks (~64 goroutines
// whatever GOMAXPROCS is), giving each call a number no other call got.
func runRoomContended(b *testing.B, op func(n int64) error) {
	b.Helper()
	var seq atomic.Int64
	b.ReportAllocs()
	b.SetParallelism(max(1, contenders/runtime.GOMAXPROCS(0)))
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if err := op(seq.Add(1)); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.StopTimer()
}

// BenchmarkRoomJoin is a buyer joining the queue for the first time: a new ticket at the back.
func BenchmarkRoomJoin(b *testing.B) {
	s, id := benchRoom(b, sale.Room{AdmissionRate: 1})
	ctx := context.Background()
	runRoomContended(b, func(n int64) error {
		tk, err := s.Join(ctx, id, "u"+strconv.FormatInt(n, 10))
		if err == nil && tk.Status != room.StatusWaiting {
			b.Errorf("join = %+v, want waiting", tk)
		}
		return err
	})
	if st, err := s.Stats(ctx, id); err != nil || st.Depth != int64(b.N) {
		b.Fatalf("after %d joins: %+v, %v", b.N, st, err)
	}
}

// BenchmarkRoomPoll is the call a waiting room serves most: a waiter asking where they stand, in a
// queue of roomPolled.
func BenchmarkRoomPoll(b *testing.B) {
	s, id := benchRoom(b, sale.Room{AdmissionRate: 1})
	ctx := context.Background()
	tickets := make([]room.Ticket, roomPolled)
	for i := range tickets {
		tk, err := s.Join(ctx, id, "u"+strconv.Itoa(i))
		if err != nil {
			b.Fatal(err)
		}
		tickets[i] = tk
	}
	runRoomContended(b, func(n int64) error {
		tk := tickets[n%roomPolled]
		got, err := s.Poll(ctx, id, tk.ID, tk.UserID)
		if err == nil && got.Status != room.StatusWaiting {
			b.Errorf("poll = %+v, want waiting", got)
		}
		return err
	})
}

// BenchmarkRoomAdmit is the room's whole cost per admitted buyer: join, an admission round, the
// poll that finds the buyer admitted, the admission token, and the revoke when checkout is done.
func BenchmarkRoomAdmit(b *testing.B) {
	s, id := benchRoom(b, sale.Room{AdmissionRate: 1e9})
	tokens, err := room.NewTokens([]byte("bench-admission-secret"), nil)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	time.Sleep(5 * time.Millisecond) // a bucket that holds plenty before the first round
	runRoomContended(b, func(n int64) error {
		user := "u" + strconv.FormatInt(n, 10)
		tk, err := s.Join(ctx, id, user)
		if err != nil {
			return err
		}
		if _, err := s.Tick(ctx, id); err != nil {
			return err
		}
		if tk, err = s.Poll(ctx, id, tk.ID, user); err != nil {
			return err
		}
		if tk.Status != room.StatusAdmitted {
			b.Errorf("poll after a round = %+v, want admitted", tk)
			return nil
		}
		if _, _, err := tokens.Mint(user, id, tk.ID, time.Until(tk.LeaseExpires)); err != nil {
			return err
		}
		if ok, err := s.Revoke(ctx, id, tk.ID); err != nil || !ok {
			b.Errorf("revoke = %v, %v; want the slot freed", ok, err)
		}
		return nil
	})
	if st, err := s.Stats(ctx, id); err != nil || st.AdmittedTotal != int64(b.N) || st.Active != 0 || st.Depth != 0 {
		b.Fatalf("after %d admissions: %+v, %v", b.N, st, err)
	}
}
