package room_test

import (
	"fmt"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/fsctl/fsctl/internal/checkout/room"
	"github.com/fsctl/fsctl/internal/contract/outcome"
	"github.com/fsctl/fsctl/internal/contract/sale"
	"github.com/fsctl/fsctl/internal/harness/testenv"
)

// TestFairStartRandom joins 200 buyers before a random-order opening in two rooms drawing from the
// same seed: before the opening nobody learns a position; after it, the order is a permutation of
// 1..200 that is not the join order and is the same in both rooms, and later joiners queue behind
// all of them in arrival order.
func TestFairStartRandom(t *testing.T) {
	t.Parallel()
	const early, late = 200, 5
	opensAt := time.Now().Add(1500 * time.Millisecond)
	cfg := sale.Room{AdmissionRate: 10, FairStart: sale.FairStartRandom}
	rooms := []*fixture{newRoom(t, cfg, opensAt, seeded(7)), newRoom(t, cfg, opensAt, seeded(7))}
	tickets := make([][]room.Ticket, len(rooms))
	for r, f := range rooms {
		for i := range early {
			tk := f.join("early-" + strconv.Itoa(i))
			if tk.Status != room.StatusPrequeue || tk.Position != 0 || tk.Ahead != 0 || tk.Depth != int64(i+1) {
				t.Fatalf("room %d: early joiner %d before the opening: %+v, want prequeue without a position", r, i, tk)
			}
			tickets[r] = append(tickets[r], tk)
		}
		if again := f.join("early-0"); again.ID != tickets[r][0].ID || again.Status != room.StatusPrequeue {
			t.Fatalf("room %d: rejoin before the opening = %+v, want ticket %s in the prequeue", r, again, tickets[r][0].ID)
		}
		if res := f.tick(); res.Admitted != 0 {
			t.Fatalf("room %d: a tick before the opening admitted %d", r, res.Admitted)
		}
	}
	if time.Now().After(opensAt) {
		t.Fatal("the joins took past the opening; the test cannot tell pre-queue from queue")
	}
	time.Sleep(time.Until(opensAt) + 100*time.Millisecond)

	orders := make([][]int64, len(rooms))
	for r, f := range rooms {
		for i, tk := range tickets[r] {
			got := f.poll(tk)
			if got.Status != room.StatusWaiting || got.Ahead != got.Position-1 || got.Depth != early {
				t.Fatalf("room %d: early joiner %d after the opening: %+v", r, i, got)
			}
			orders[r] = append(orders[r], got.Position)
		}
		sorted := slices.Sorted(slices.Values(orders[r]))
		for i, p := range sorted {
			if p != int64(i+1) {
				t.Fatalf("room %d: positions %v are not a permutation of 1..%d", r, sorted, early)
			}
		}
		if slices.IsSorted(orders[r]) {
			t.Fatalf("room %d: early joiners got their join order %v; it should be drawn", r, orders[r])
		}
	}
	if !slices.Equal(orders[0], orders[1]) {
		t.Fatal("two rooms drawing from the same seed ordered the same joins differently")
	}
	f := rooms[0]
	for i := range late {
		tk := f.join("late-" + strconv.Itoa(i))
		if want := int64(early + i + 1); tk.Status != room.StatusWaiting || tk.Position != want {
			t.Fatalf("late joiner %d: %+v, want waiting at %d", i, tk, want)
		}
	}
}

// TestFairStartFIFO keeps joining order from the first joiner on, before the opening too.
func TestFairStartFIFO(t *testing.T) {
	t.Parallel()
	f := newRoom(t, sale.Room{AdmissionRate: 10, FairStart: sale.FairStartFIFO}, time.Now().Add(time.Hour), seeded(7))
	for i := range 20 {
		tk := f.join("u" + strconv.Itoa(i))
		if tk.Status != room.StatusWaiting || tk.Position != int64(i+1) || tk.Ahead != int64(i) {
			t.Fatalf("joiner %d: %+v, want waiting at %d", i, tk, i+1)
		}
		if want := time.Duration(i) * 100 * time.Millisecond; tk.EstimatedWait != want {
			t.Errorf("joiner %d: estimated wait %s, want %s (ahead / rate)", i, tk.EstimatedWait, want)
		}
	}
	if res := f.tick(); res.Admitted != 0 || res.Depth != 20 {
		t.Fatalf("tick before the opening = %+v, want nobody admitted", res)
	}
}

// TestRejoin gives a waiting buyer the same ticket and place, and an admitted one the same slot.
func TestRejoin(t *testing.T) {
	t.Parallel()
	f := newRoom(t, sale.Room{AdmissionRate: 1000, FairStart: sale.FairStartFIFO}, time.Now().Add(-time.Minute))
	first := f.join("alice")
	f.join("bob")
	carol := f.join("carol")
	for range 3 {
		if again := f.join("carol"); again.ID != carol.ID || again.Position != 3 || again.Status != room.StatusWaiting {
			t.Fatalf("rejoin = %+v, want %+v", again, carol)
		}
	}
	if st := f.stats(); st.Depth != 3 {
		t.Fatalf("depth %d after rejoins, want 3", st.Depth)
	}
	for f.stats().Active == 0 {
		f.tick()
	}
	if again := f.join("alice"); again.ID != first.ID || again.Status != room.StatusAdmitted || again.LeaseExpires.IsZero() {
		t.Fatalf("rejoin of an admitted buyer = %+v, want ticket %s admitted", again, first.ID)
	}
}

// TestRoomOnRedisCluster: the waiting room on the local Redis Cluster, its scripts on the sale's
// own hash tag: buyers join in order, two instances tick, the first are admitted with a lease and
// a token-bearing poll, a rejoin keeps its ticket, and the depth counts down.
func TestRoomOnRedisCluster(t *testing.T) {
	t.Parallel()
	f := newRoomOn(t, func(tb testing.TB) redis.UniversalClient { return testenv.RedisCluster(tb) }, //nolint:gocritic // RedisCluster returns the concrete client
		sale.Room{AdmissionRate: 1000, FairStart: sale.FairStartFIFO}, time.Now().Add(-time.Minute))
	var tks []room.Ticket
	for i := range 20 {
		tks = append(tks, f.join(fmt.Sprintf("u%d", i)))
	}
	if again := f.join("u3"); again.ID != tks[3].ID || again.Position != 4 {
		t.Fatalf("rejoin on the cluster = %+v, want %+v", again, tks[3])
	}
	other := f.instance()
	for f.stats().Active < 20 {
		f.tick()
		if _, err := other.Tick(f.ctx, f.sale); err != nil {
			t.Fatalf("second instance's tick: %v", err)
		}
	}
	for _, tk := range tks {
		if got := f.poll(tk); got.Status != room.StatusAdmitted || got.LeaseExpires.IsZero() {
			t.Fatalf("%s after admission on the cluster: %+v", tk.UserID, got)
		}
	}
	if st := f.stats(); st.Depth != 0 || st.AdmittedTotal != 20 {
		t.Fatalf("stats on the cluster: %+v, want 20 admitted and none waiting", st)
	}
}

// TestPollRefusals: another user's ticket and unknown tickets are NotFound; a sale without a room too.
func TestPollRefusals(t *testing.T) {
	t.Parallel()
	f := newRoom(t, sale.Room{AdmissionRate: 10}, time.Now().Add(-time.Minute))
	alice := f.join("alice")
	for _, tc := range []struct{ name, ticket, user string }{
		{"another user", alice.ID, "mallory"},
		{"unknown ticket", "0123456789abcdef0123456789abcdef", "alice"},
		{"malformed ticket", "../" + alice.ID, "alice"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := f.store.Poll(f.ctx, f.sale, tc.ticket, tc.user)
			wantCode(t, err, outcome.NotFound)
		})
	}
	_, err := f.store.Join(f.ctx, f.sale+"-none", "alice")
	wantCode(t, err, outcome.NotFound)
	_, err = f.store.Tick(f.ctx, f.sale+"-none")
	wantCode(t, err, outcome.NotFound)
	wantCode(t, f.store.SetPaused(f.ctx, f.sale+"-none", true), outcome.NotFound)
	_, err = f.store.Join(f.ctx, f.sale, "has space")
	wantCode(t, err, outcome.InvalidRequest)
	if got := f.poll(alice); got.Position != 1 {
		t.Fatalf("alice after the refusals: %+v", got)
	}
}

// TestTwoInstances: joins on one instance, polls and ticks on another see the same tickets.
func TestTwoInstances(t *testing.T) {
	t.Parallel()
	f := newRoom(t, sale.Room{AdmissionRate: 1000, MaxActive: 1, FairStart: sale.FairStartFIFO}, time.Now().Add(-time.Minute))
	other := f.instance()
	a, b := f.join("a"), f.join("b")
	got, err := other.Poll(f.ctx, f.sale, b.ID, "b")
	if err != nil || got.ID != b.ID || got.Position != 2 {
		t.Fatalf("b on the other instance = %+v, %v", got, err)
	}
	time.Sleep(5 * time.Millisecond) // let the bucket hold a whole admission
	res, err := other.Tick(f.ctx, f.sale)
	if err != nil || res.Admitted != 1 || res.Active != 1 || res.Depth != 1 {
		t.Fatalf("tick on the other instance = %+v, %v; want a admitted", res, err)
	}
	if got := f.poll(a); got.Status != room.StatusAdmitted {
		t.Fatalf("a on the first instance = %+v, want admitted", got)
	}
	if ok, err := other.Revoke(f.ctx, f.sale, a.ID); err != nil || !ok {
		t.Fatalf("revoke on the other instance = %v, %v", ok, err)
	}
	if res := f.tick(); res.Admitted != 1 {
		t.Fatalf("tick after the revoke = %+v, want b admitted", res)
	}
	if got := f.poll(b); got.Status != room.StatusAdmitted {
		t.Fatalf("b = %+v, want admitted", got)
	}
}
