package stock

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"

	"github.com/fsctl/fsctl/internal/contract/outcome"
	"github.com/fsctl/fsctl/internal/contract/sale"
	"github.com/fsctl/fsctl/internal/harness/testenv"
)

// mergeFixture is a Store whose batcher records its pipelines (newPipeHook), with one preloaded
// unsharded item of two units and a per-user limit of one, under the hook's id.
func mergeFixture(t *testing.T) (*Store, *batcher, *pipeHook, sale.Sale) {
	t.Helper()
	b, h := newPipeHook(t, DefaultBatchMax, 1, true)
	st := New(b.rdb)
	b.reserve, st.batch = st.reserve, b
	sl := sale.Sale{ID: h.id, OpensAt: time.Now().Add(-time.Minute), PerUserLimit: 1, HoldTTL: time.Minute,
		Items: []sale.Item{{ID: "item", Quantity: 2}}}
	// Preloaded and reset through a client of its own: the hook holds the first pipeline it sees.
	loader := New(testenv.Redis(t))
	t.Cleanup(func() {
		if err := loader.Reset(context.Background(), sl); err != nil {
			t.Errorf("reset: %v", err)
		}
	})
	if _, err := loader.Preload(context.Background(), sl, nil); err != nil {
		t.Fatalf("preload: %v", err)
	}
	return st, b, h, sl
}

type attemptResult struct {
	rv  Reservation
	err error
}

// queueReserves queues one reserve an attempt, in this order, behind the held first pipeline, then
// releases it and returns their answers.
func queueReserves(t *testing.T, st *Store, b *batcher, h *pipeHook, wait func() error, reqs []Request) []attemptResult {
	t.Helper()
	out := make([]attemptResult, len(reqs))
	var wg sync.WaitGroup
	for i, r := range reqs {
		wg.Go(func() {
			rv, err := st.Reserve(context.Background(), r)
			out[i] = attemptResult{rv, err}
		})
		waitPending(t, b, i+1) // the next attempt queues behind this one
	}
	h.release()
	wg.Wait()
	if err := wait(); err != nil {
		t.Fatalf("first call: %v", err)
	}
	return out
}

// TestReservesOfOneShardGoAsOneCall proves the reserves of one shard that meet in a pipeline are
// sent as one call of the script (one command in the pipeline), and that each attempt is answered
// as if it ran alone, in its order: a buyer's second key meets the per-user limit, a repeated key
// replays the first answer, the attempt after the last unit is SOLD_OUT.
func TestReservesOfOneShardGoAsOneCall(t *testing.T) {
	t.Parallel()
	st, b, h, sl := mergeFixture(t)
	wait := holdFirst(t, b, h)
	req := func(user, key string) Request {
		return Request{SaleID: sl.ID, ItemID: "item", UserID: user, IdemKey: key, OrderID: uuid.Must(uuid.NewV7())}
	}
	reqs := []Request{req("ann", "k1"), req("ann", "k2"), req("bob", "k"), req("bob", "k"), req("cy", "k"), req("ann", "k1")}
	got := queueReserves(t, st, b, h, wait, reqs)

	want := []struct {
		code   outcome.Code
		replay bool
		order  uuid.UUID // for RESERVED
	}{
		{outcome.Reserved, false, reqs[0].OrderID},
		{outcome.AlreadyPurchased, false, uuid.Nil},
		{outcome.Reserved, false, reqs[2].OrderID},
		{outcome.Reserved, true, reqs[2].OrderID},
		{outcome.SoldOut, false, uuid.Nil},
		{outcome.Reserved, true, reqs[0].OrderID},
	}
	for i, w := range want {
		g := got[i]
		if g.err != nil || g.rv.Outcome != w.code || g.rv.Replay != w.replay || g.rv.OrderID != w.order {
			t.Errorf("attempt %d (%s/%s) = %+v, %v; want %s replay=%v order %s", i, reqs[i].UserID, reqs[i].IdemKey,
				g.rv, g.err, w.code, w.replay, w.order)
		}
	}
	// The held INCR, then the six reserves as one command.
	if sizes, _ := h.recorded(); !slices.Equal(sizes, []int{1, 1}) {
		t.Errorf("pipeline sizes %v, want [1 1]", sizes)
	}
	state, err := st.Snapshot(context.Background(), sl.ID, sl.Items)
	if err != nil {
		t.Fatal(err)
	}
	if state[0].Stock != 0 || state[0].Holds != 2 {
		t.Errorf("after the merged call: stock %d, holds %d; want 0 and 2", state[0].Stock, state[0].Holds)
	}
}

// TestAMergedCallsErrorReachesEveryAttempt: when the merged call fails, every attempt in it gets
// the error, none an answer (here the buyers' record is not a hash, so the script's HGET fails).
func TestAMergedCallsErrorReachesEveryAttempt(t *testing.T) {
	t.Parallel()
	st, b, h, sl := mergeFixture(t)
	if err := b.rdb.Set(context.Background(), ItemKeys(sl.ID, "item").Buyers(), "not a hash", 0).Err(); err != nil {
		t.Fatal(err)
	}
	wait := holdFirst(t, b, h)
	var reqs []Request
	for _, u := range []string{"ann", "bob", "cy"} {
		reqs = append(reqs, Request{SaleID: sl.ID, ItemID: "item", UserID: u, IdemKey: "k", OrderID: uuid.Must(uuid.NewV7())})
	}
	for i, g := range queueReserves(t, st, b, h, wait, reqs) {
		if g.err == nil || !strings.Contains(g.err.Error(), "WRONGTYPE") || g.rv.Outcome != "" {
			t.Errorf("attempt %d = %+v, %v; want the script's error", i, g.rv, g.err)
		}
	}
	if sizes, _ := h.recorded(); !slices.Equal(sizes, []int{1, 1}) {
		t.Errorf("pipeline sizes %v, want [1 1]", sizes)
	}
}

// TestAReserveWithATransferGoesAlone: a reserve that brings units borrowed from another shard is
// never merged (the transfer is the call's own, applied before its attempt); the other reserves of
// the shard are.
func TestAReserveWithATransferGoesAlone(t *testing.T) {
	b := &batcher{}
	st := New(nil)
	b.reserve = st.reserve
	line := func(transfer string) *batchCall {
		c := append(newScriptCall("sha", reserveSharedKeys+1, reserveSharedArgs+5),
			"m", "s", "b", "h", "o", "a", "idem", "ttl", transfer, int64(3), "", "u", "order", "0", "k", "")
		return &batchCall{cmd: redis.NewCmd(context.Background(), c...), script: st.reserve}
	}
	if _, ok := b.shardOf(line("")); !ok {
		t.Fatal("a reserve without a transfer is not mergeable")
	}
	if _, ok := b.shardOf(line("t1")); ok {
		t.Fatal("a reserve with a transfer is mergeable")
	}
	send, merged := b.mergeReserves(context.Background(), []*batchCall{line(""), line("t1"), line("")})
	if len(send) != 2 || len(merged) != 1 || len(merged[0].parts) != 2 {
		t.Fatalf("sent %d calls with %d merged, want the transfer's call and one merged call of two", len(send), len(merged))
	}
	args := send[0].cmd.Args()
	if args[2] != reserveSharedKeys+2 || len(args) != 3+reserveSharedKeys+2+reserveSharedArgs+2*5 {
		t.Errorf("merged call line %v: want the shard's keys, two idempotency keys, the call's arguments, two attempts'", args)
	}
}
