package room_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/fsctl/fsctl/internal/checkout/room"
	"github.com/fsctl/fsctl/internal/contract/outcome"
	"github.com/fsctl/fsctl/internal/contract/sale"
	"github.com/fsctl/fsctl/internal/harness/testenv/eventually"
)

// TestAdmissionRate holds 40 admissions a second within 10% over 10 s while two instances tick at
// jittered intervals and 1,000 waiters keep polling.
func TestAdmissionRate(t *testing.T) {
	t.Parallel()
	const rate, waiters, window = 40, 1000, 10 * time.Second
	f := newRoom(t, sale.Room{AdmissionRate: rate, WaiterTTL: 30 * time.Second, ActiveTTL: time.Minute}, time.Now().Add(-time.Minute))
	tickets := make([]room.Ticket, waiters)
	for i := range tickets {
		tickets[i] = f.join("u" + strconv.Itoa(i))
	}
	ctx, cancel := context.WithCancel(f.ctx)
	var wg sync.WaitGroup
	wg.Go(func() { // the buyers' clients
		for ctx.Err() == nil {
			next := time.Now().Add(2 * time.Second)
			for _, tk := range tickets {
				if _, err := f.store.Poll(ctx, f.sale, tk.ID, tk.UserID); err != nil && ctx.Err() == nil {
					t.Errorf("poll: %v", err)
					return
				}
			}
			sleepCtx(ctx, time.Until(next))
		}
	})
	for i, st := range []*room.Store{f.store, f.instance()} {
		wg.Go(func() { // two server instances ticking on their own timers
			rng := rand.New(rand.NewPCG(uint64(i), 1))
			for ctx.Err() == nil {
				if _, err := st.Tick(ctx, f.sale); err != nil && ctx.Err() == nil {
					t.Errorf("instance %d: tick: %v", i, err)
					return
				}
				sleepCtx(ctx, time.Duration(25+rng.IntN(36))*time.Millisecond)
			}
		})
	}
	sleepCtx(ctx, 300*time.Millisecond) // the first rounds spend what built up since the joins
	before := f.stats().AdmittedTotal
	time.Sleep(window)
	after := f.stats()
	cancel()
	wg.Wait()
	got := after.AdmittedTotal - before
	t.Logf("admitted %d in %s (rate %d/s), %d waiting, %d expired", got, window, rate, after.Depth, after.ExpiredTotal)
	if got < 360 || got > 440 {
		t.Errorf("admitted %d in %s, want 400 ± 10%%", got, window)
	}
	if after.ExpiredTotal != 0 || after.Active != after.AdmittedTotal {
		t.Errorf("stats %+v: live buyers expired", after)
	}
}

func sleepCtx(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}

// TestMaxActive never lets more than MaxActive buyers be active, and a revoke frees exactly one slot.
func TestMaxActive(t *testing.T) {
	t.Parallel()
	f := newRoom(t, sale.Room{AdmissionRate: 10000, MaxActive: 5, FairStart: sale.FairStartFIFO}, time.Now().Add(-time.Minute))
	tickets := make([]room.Ticket, 20)
	for i := range tickets {
		tickets[i] = f.join("u" + strconv.Itoa(i))
	}
	for range 20 {
		if res := f.tick(); res.Active > 5 {
			t.Fatalf("tick = %+v: more than 5 active", res)
		}
		time.Sleep(2 * time.Millisecond)
	}
	if st := f.stats(); st.Active != 5 || st.AdmittedTotal != 5 || st.Depth != 15 {
		t.Fatalf("stats %+v, want 5 active of 5 admitted, 15 waiting", st)
	}
	for i, tk := range tickets {
		got := f.poll(tk)
		if want := i < 5; (got.Status == room.StatusAdmitted) != want {
			t.Fatalf("ticket %d: %+v; the first 5 should be admitted", i, got)
		}
	}
	if ok, err := f.store.Revoke(f.ctx, f.sale, tickets[2].ID); err != nil || !ok {
		t.Fatalf("revoke = %v, %v", ok, err)
	}
	if res := f.tick(); res.Admitted != 1 || res.Active != 5 {
		t.Fatalf("tick after a revoke = %+v, want exactly one admitted", res)
	}
	if res := f.tick(); res.Admitted != 0 {
		t.Fatalf("second tick after a revoke = %+v, want nobody", res)
	}
	if got := f.poll(tickets[5]); got.Status != room.StatusAdmitted {
		t.Fatalf("next in line = %+v, want admitted", got)
	}
	if ok, err := f.store.Revoke(f.ctx, f.sale, tickets[2].ID); err != nil || ok {
		t.Fatalf("second revoke = %v, %v; want false", ok, err)
	}
	_, err := f.store.Poll(f.ctx, f.sale, tickets[2].ID, tickets[2].UserID)
	wantCode(t, err, outcome.NotFound)
	if again := f.join(tickets[2].UserID); again.ID == tickets[2].ID || again.Position != 15 {
		t.Fatalf("rejoin after a revoke = %+v, want a new ticket at the back (15)", again)
	}
}

// TestAbandoned: waiters who stop polling lose their place and are skipped, admitted buyers who stop
// polling lose their slot and it is reused, their polls say expired, and rejoining starts at the back.
func TestAbandoned(t *testing.T) {
	t.Parallel()
	f := newRoom(t, sale.Room{AdmissionRate: 1000, MaxActive: 2, FairStart: sale.FairStartFIFO,
		WaiterTTL: time.Second, ActiveTTL: time.Second, Paused: true}, time.Now().Add(-time.Minute))
	a, b, c, d, e := f.join("a"), f.join("b"), f.join("c"), f.join("d"), f.join("e")
	f.keepAlive(1300*time.Millisecond, c, d, e) // a and b went quiet

	if got := f.poll(b); got.Status != room.StatusExpired {
		t.Fatalf("quiet waiter b before any tick = %+v, want expired", got)
	}
	if err := f.store.SetPaused(f.ctx, f.sale, false); err != nil {
		t.Fatal(err)
	}
	time.Sleep(20 * time.Millisecond)
	if res := f.tick(); res.ExpiredWaiters != 1 || res.Admitted != 2 || res.Active != 2 || res.Depth != 1 {
		t.Fatalf("tick = %+v, want a dropped, c and d admitted, e waiting", res)
	}
	for _, tk := range []room.Ticket{a, a, b} {
		if got := f.poll(tk); got.Status != room.StatusExpired {
			t.Fatalf("poll of quiet %s = %+v, want expired", tk.UserID, got)
		}
	}
	if got := f.poll(c); got.Status != room.StatusAdmitted {
		t.Fatalf("c = %+v, want admitted", got)
	}
	f.keepAlive(1300*time.Millisecond, e) // c and d went quiet after admission

	if res := f.tick(); res.ExpiredActive != 2 || res.Admitted != 1 || res.Active != 1 || res.Depth != 0 {
		t.Fatalf("tick = %+v, want c and d dropped and e admitted in their place", res)
	}
	if got := f.poll(c); got.Status != room.StatusExpired {
		t.Fatalf("c after its lease = %+v, want expired", got)
	}
	if st := f.stats(); st.ExpiredTotal != 4 || st.AdmittedTotal != 3 || st.Active != 1 {
		t.Fatalf("stats %+v, want 4 expired, 3 admitted, 1 active", st)
	}
	if err := f.store.SetPaused(f.ctx, f.sale, true); err != nil {
		t.Fatal(err)
	}
	g := f.join("g")
	again := f.join("a")
	if again.ID == a.ID || again.Status != room.StatusWaiting || again.Position != 2 || g.Position != 1 {
		t.Fatalf("a rejoining = %+v (g %+v), want a new ticket behind g", again, g)
	}
}

// TestPause: the burst after a gap in ticking is one second's worth; nothing is admitted while
// paused, and nothing saved up before or during the pause is released after it.
func TestPause(t *testing.T) {
	t.Parallel()
	f := newRoom(t, sale.Room{AdmissionRate: 20}, time.Now().Add(-time.Minute))
	// idleFor waits until the room's last round (or pause) is d old on Redis's clock, the one the
	// token bucket refills by.
	idleFor := func(d time.Duration) {
		t.Helper()
		// A tight pace, for some waits are only 50 ms.
		eventually.OKEvery(t, d+5*time.Second, 10*time.Millisecond, func() error {
			last, err := f.rdb.HGet(f.ctx, room.SaleKeys(f.sale).Meta(), "last_ms").Int64()
			if err != nil {
				t.Fatalf("the room's last round: %v", err)
			}
			now, err := f.rdb.Time(f.ctx).Result()
			if err != nil {
				t.Fatal(err)
			}
			if now.Sub(time.UnixMilli(last)) < d {
				return fmt.Errorf("the room's last round is not %s old on Redis's clock", d)
			}
			return nil
		})
	}
	for i := range 100 {
		f.join("u" + strconv.Itoa(i))
	}
	f.tick()
	idleFor(1200 * time.Millisecond) // 24 admissions' worth of time, no ticks
	if res := f.tick(); res.Admitted != 20 {
		t.Fatalf("tick after 1.2 s without ticks = %+v, want the burst cap of 20", res)
	}

	idleFor(1200 * time.Millisecond) // the bucket fills again
	if err := f.store.SetPaused(f.ctx, f.sale, true); err != nil {
		t.Fatal(err)
	}
	before := f.stats()
	for range 10 {
		if res := f.tick(); res.Admitted != 0 {
			t.Fatalf("tick while paused = %+v", res)
		}
		idleFor(50 * time.Millisecond)
	}
	idleFor(700 * time.Millisecond) // and a paused stretch nobody ticks through
	if st := f.stats(); !st.Paused || st.AdmittedTotal != before.AdmittedTotal {
		t.Fatalf("stats while paused %+v, want paused and %d admitted", st, before.AdmittedTotal)
	}
	if err := f.store.SetPaused(f.ctx, f.sale, false); err != nil {
		t.Fatal(err)
	}
	if res := f.tick(); res.Admitted > 1 {
		t.Fatalf("first tick after resume = %+v: allowance saved up before the resume", res)
	}
}

// TestOpening: ticks before the opening admit nobody and save nothing up for after it.
func TestOpening(t *testing.T) {
	t.Parallel()
	opensAt := time.Now().Add(time.Second)
	f := newRoom(t, sale.Room{AdmissionRate: 20, FairStart: sale.FairStartFIFO}, opensAt)
	for i := range 50 {
		f.join("u" + strconv.Itoa(i))
	}
	// The room keeps the opening to the millisecond (Redis TIME against a UnixMilli).
	opening := opensAt.Truncate(time.Millisecond)
	for {
		res := f.tick()
		// Only a tick that ended before the opening is held to admitting no one: one that began
		// just before it may read the clock after it (CI saw one on a loaded box admit 1).
		if !time.Now().Before(opening) {
			break
		}
		if res.Admitted != 0 {
			t.Fatalf("tick before the opening = %+v", res)
		}
		time.Sleep(100 * time.Millisecond)
	}
	time.Sleep(time.Until(opensAt) + 200*time.Millisecond)
	if res := f.tick(); res.Admitted >= 20 {
		t.Fatalf("first tick 0.2 s after the opening = %+v: allowance saved up before it", res)
	}
	if st := f.stats(); !st.OpensAt.Equal(opensAt.Truncate(time.Millisecond)) || st.Rate != 20 {
		t.Fatalf("stats %+v", st)
	}
}

// TestExpiredTicketsAreForgotten: an expired ticket answers "expired" for the tombstone time, then
// the tick deletes it, so a room keeps the tickets of its live waiters and of the last minutes, not
// of every join since the opening (a long sale grew its tickets without bound before).
func TestExpiredTicketsAreForgotten(t *testing.T) {
	t.Parallel()
	const quiet = 40
	f := newRoom(t, sale.Room{AdmissionRate: 1000, FairStart: sale.FairStartFIFO, WaiterTTL: time.Second, ActiveTTL: time.Second, Paused: true},
		time.Now().Add(-time.Minute), room.Tombstones(500*time.Millisecond))
	var gone []room.Ticket
	for i := range quiet {
		gone = append(gone, f.join("quiet-"+strconv.Itoa(i)))
	}
	live := f.join("live")
	f.keepAlive(1100*time.Millisecond, live)
	k := room.SaleKeys(f.sale)
	count := func() (tickets, ended int64) {
		t.Helper()
		tickets, err := f.rdb.HLen(f.ctx, k.Tickets()).Result()
		if err != nil {
			t.Fatal(err)
		}
		ended, err = f.rdb.ZCard(f.ctx, k.Ended()).Result()
		if err != nil {
			t.Fatal(err)
		}
		return tickets, ended
	}
	if res := f.tick(); res.ExpiredWaiters != quiet {
		t.Fatalf("tick = %+v, want %d quiet waiters expired", res, quiet)
	}
	if got := f.poll(gone[0]); got.Status != room.StatusExpired {
		t.Fatalf("a quiet waiter's poll right after = %+v, want expired (its tombstone)", got)
	}
	if tickets, ended := count(); tickets != quiet+1 || ended != quiet {
		t.Fatalf("after the expiry: %d tickets and %d tombstones, want %d and %d", tickets, ended, quiet+1, quiet)
	}
	f.keepAlive(600*time.Millisecond, live)
	f.tick()
	if tickets, ended := count(); tickets != 1 || ended != 0 {
		t.Fatalf("after the tombstone time: %d tickets and %d tombstones, want the live waiter's alone", tickets, ended)
	}
	if _, err := f.store.Poll(f.ctx, f.sale, gone[0].ID, gone[0].UserID); err == nil {
		t.Fatal("a forgotten ticket still polls")
	}
	if got := f.poll(live); got.Status != room.StatusWaiting {
		t.Fatalf("the live waiter = %+v, want still waiting", got)
	}
}

// TestConfigureKeepsTheNewestRevision: settings read before an operator's change (an instance's
// round holding the sale as it was) cannot overwrite that change once it is live; settings of a
// later revision can, and settings without a revision are not checked.
func TestConfigureKeepsTheNewestRevision(t *testing.T) {
	t.Parallel()
	opens := time.Now().Add(-time.Minute)
	f := newRoom(t, sale.Room{AdmissionRate: 20}, opens)
	if err := f.store.Configure(f.ctx, f.sale, sale.Room{AdmissionRate: 20}, opens, 100); err != nil {
		t.Fatal(err)
	}
	f.join("a")
	if err := f.store.Configure(f.ctx, f.sale, sale.Room{AdmissionRate: 7, Paused: true}, opens, 200); err != nil {
		t.Fatal(err)
	}
	if err := f.store.Configure(f.ctx, f.sale, sale.Room{AdmissionRate: 20}, opens, 150); err != nil {
		t.Fatalf("stale settings: %v, want nil (nothing written)", err)
	}
	if st := f.stats(); !st.Paused || st.Rate != 7 {
		t.Fatalf("stats after stale settings %+v, want the operator's pause at rate 7", st)
	}
	if res := f.tick(); res.Admitted != 0 {
		t.Fatalf("tick = %+v: the stale settings resumed admission", res)
	}
	if err := f.store.Configure(f.ctx, f.sale, sale.Room{AdmissionRate: 9}, opens, 300); err != nil {
		t.Fatal(err)
	}
	if st := f.stats(); st.Paused || st.Rate != 9 {
		t.Fatalf("stats after newer settings %+v, want resumed at rate 9", st)
	}
	if err := f.store.Configure(f.ctx, f.sale, sale.Room{AdmissionRate: 11}, opens, 0); err != nil {
		t.Fatal(err)
	}
	if st := f.stats(); st.Rate != 11 {
		t.Fatalf("stats after unversioned settings %+v, want rate 11", st)
	}
}
