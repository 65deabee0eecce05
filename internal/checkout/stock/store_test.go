package stock_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/fsctl/fsctl/internal/checkout/stock"
	"github.com/fsctl/fsctl/internal/contract/outcome"
	"github.com/fsctl/fsctl/internal/contract/sale"
	"github.com/fsctl/fsctl/internal/harness/testenv"
)

func TestIdempotency(t *testing.T) {
	t.Parallel()
	t.Run("retry replays the reservation and takes one unit", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t, 10, 1)
		first := f.mustReserve("alice", "k1")
		again := f.reserve("alice", "k1")
		if again.Outcome != outcome.Reserved || !again.Replay || again.OrderID != first.OrderID ||
			!again.ExpiresAt.Equal(first.ExpiresAt) || again.Slot != first.Slot {
			t.Fatalf("retry = %+v, want a replay of %+v", again, first)
		}
		if s := f.stock(); s != 9 {
			t.Errorf("stock = %d after one reservation and its retry, want 9", s)
		}
		f.checkInvariant("retry")
	})

	t.Run("sold-out answer outlives returned stock", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t, 1, 1)
		won := f.mustReserve("alice", "a")
		if r := f.reserve("bob", "b"); r.Outcome != outcome.SoldOut || r.Replay {
			t.Fatalf("bob's first try = %+v, want a fresh SOLD_OUT", r)
		}
		if !f.release(won.OrderID) {
			t.Fatal("release of alice's order reported nothing released")
		}
		if s := f.stock(); s != 1 {
			t.Fatalf("stock = %d after release, want 1", s)
		}
		if r := f.reserve("bob", "b"); r.Outcome != outcome.SoldOut || !r.Replay {
			t.Fatalf("bob's retry with the same key = %+v, want the remembered SOLD_OUT", r)
		}
		f.mustReserve("bob", "b2") // the unit really is back; only the key is bound to its answer
		f.checkInvariant("bob's new key")
	})

	// Each pair would be one record if the user id were not length-prefixed in the key.
	for _, tc := range []struct {
		name        string
		user1, key1 string
		user2, key2 string
	}{
		{name: "same key string of another user", user1: "alice", key1: "k", user2: "bob", key2: "k"},
		{name: "separator in user id", user1: "a:b", key1: "c", user2: "a", key2: "b:c"},
		{name: "length-like user id", user1: "1:a", key1: "b", user2: "1", key2: "a:b"},
		{name: "empty-looking split", user1: "x:", key1: "y", user2: "x", key2: ":y"},
	} {
		t.Run("scoped to user/"+tc.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, 10, 1)
			r1 := f.mustReserve(tc.user1, tc.key1)
			r2 := f.reserve(tc.user2, tc.key2)
			if r2.Outcome != outcome.Reserved || r2.Replay || r2.OrderID == r1.OrderID {
				t.Fatalf("(%q, %q) after (%q, %q): %+v, want its own fresh reservation (first was %s)",
					tc.user2, tc.key2, tc.user1, tc.key1, r2, r1.OrderID)
			}
			if s := f.stock(); s != 8 {
				t.Errorf("stock = %d, want 8", s)
			}
			f.checkInvariant("two users")
		})
	}
}

func TestPerUserLimit(t *testing.T) {
	t.Parallel()
	for _, limit := range []int{1, 3} {
		t.Run(fmt.Sprintf("limit %d", limit), func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, 10, limit)
			for slot := range limit {
				if r := f.mustReserve("alice", fmt.Sprintf("k%d", slot)); r.Slot != slot {
					t.Fatalf("purchase %d got slot %d, want %d", slot, r.Slot, slot)
				}
			}
			if m := f.buyerMask("alice"); m != 1<<limit-1 {
				t.Errorf("buyer mask = %b, want %b", m, 1<<limit-1)
			}
			over := f.reserve("alice", "over")
			if over.Outcome != outcome.AlreadyPurchased || over.Replay {
				t.Fatalf("purchase over the limit = %+v, want ALREADY_PURCHASED", over)
			}
			if s := f.stock(); s != int64(10-limit) {
				t.Errorf("stock = %d, want %d", s, 10-limit)
			}
			f.checkInvariant("limit reached")
			// ALREADY_PURCHASED is a final answer: freeing a slot does not change what the key says.
			first := f.reserve("alice", "k0")
			if !f.release(first.OrderID) {
				t.Fatal("release reported nothing released")
			}
			if r := f.reserve("alice", "over"); r.Outcome != outcome.AlreadyPurchased || !r.Replay {
				t.Fatalf("retry of the refused key after a release = %+v, want the remembered ALREADY_PURCHASED", r)
			}
			f.checkInvariant("release")
		})
	}

	t.Run("released slot is reused", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t, 10, 3)
		var held [3]stock.Reservation
		for i := range held {
			held[i] = f.mustReserve("alice", fmt.Sprintf("k%d", i))
		}
		if !f.release(held[1].OrderID) {
			t.Fatal("release of slot 1 reported nothing released")
		}
		if m := f.buyerMask("alice"); m != 0b101 {
			t.Errorf("buyer mask after releasing slot 1 = %b, want 101", m)
		}
		f.checkInvariant("release of slot 1")
		again := f.mustReserve("alice", "k3")
		if again.Slot != 1 {
			t.Errorf("new order got slot %d, want the freed slot 1", again.Slot)
		}
		if m := f.buyerMask("alice"); m != 0b111 {
			t.Errorf("buyer mask = %b, want 111", m)
		}
		if r := f.reserve("alice", "over"); r.Outcome != outcome.AlreadyPurchased {
			t.Errorf("fourth live order = %+v, want ALREADY_PURCHASED", r)
		}
		f.checkInvariant("buying the slot back")
	})
}

func TestSaleStateIsNotRemembered(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		edit  func(*sale.Sale)
		want  outcome.Code
		field string // meta field that opens the sale
		value any
	}{
		{"not started", func(s *sale.Sale) { s.OpensAt = time.Now().Add(time.Hour) }, outcome.NotStarted,
			"opens_at_ms", time.Now().Add(-time.Second).UnixMilli()},
		{"paused", func(s *sale.Sale) { s.Paused = true }, outcome.Paused, "paused", "0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, 5, 1, tc.edit)
			for range 2 {
				if r := f.reserve("alice", "k"); r.Outcome != tc.want || r.Replay {
					t.Fatalf("reserve = %+v, want a fresh %s", r, tc.want)
				}
			}
			if s := f.stock(); s != 5 {
				t.Errorf("stock = %d, want 5 untouched", s)
			}
			if err := f.rdb.HSet(f.ctx, f.keys.Meta(), tc.field, tc.value).Err(); err != nil {
				t.Fatal(err)
			}
			f.mustReserve("alice", "k")
			f.checkInvariant("opening")
		})
	}

	t.Run("item never preloaded", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t, 5, 1)
		req := f.request("alice", "k")
		req.ItemID = "ghost"
		_, err := f.store.Reserve(f.ctx, req)
		var oe *outcome.Error
		if !errors.As(err, &oe) || oe.Code != outcome.NotFound {
			t.Fatalf("reserve of an item never preloaded: err = %v, want an *outcome.Error with NOT_FOUND", err)
		}
		if n := f.rdb.Exists(f.ctx, stock.ItemKeys(f.sale.ID, "ghost").Idem("alice", "k")).Val(); n != 0 {
			t.Errorf("NOT_FOUND was remembered under the idempotency key")
		}
	})
}

func TestReleaseOnce(t *testing.T) {
	t.Parallel()
	t.Run("twice", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t, 3, 1)
		r := f.mustReserve("alice", "k")
		f.checkInvariant("reserve")
		if !f.release(r.OrderID) {
			t.Fatal("first release reported nothing released")
		}
		f.checkInvariant("first release")
		if f.release(r.OrderID) {
			t.Fatal("second release reported a release")
		}
		f.checkInvariant("second release")
		if s := f.stock(); s != 3 {
			t.Errorf("stock = %d, want 3", s)
		}
	})

	t.Run("concurrent", func(t *testing.T) {
		t.Parallel()
		const releasers = 50
		f := newFixture(t, 3, 1)
		r := f.mustReserve("alice", "k")
		var released, failed atomic.Int32
		start := make(chan struct{})
		var wg sync.WaitGroup
		for range releasers {
			wg.Go(func() {
				<-start
				ok, err := f.store.Release(f.ctx, stock.Release{SaleID: f.sale.ID, ItemID: f.item, OrderID: r.OrderID, Status: "EXPIRED"})
				if err != nil {
					failed.Add(1)
					t.Error(err)
				}
				if ok {
					released.Add(1)
				}
			})
		}
		close(start)
		wg.Wait()
		if n := released.Load(); n != 1 || failed.Load() != 0 {
			t.Fatalf("%d of %d concurrent releases released the unit, want exactly 1", n, releasers)
		}
		if s := f.stock(); s != 3 {
			t.Errorf("stock = %d, want 3", s)
		}
		f.checkInvariant("concurrent releases")
	})

	t.Run("unknown order", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t, 3, 1)
		f.mustReserve("alice", "k")
		unknown := uuid.Must(uuid.NewV7())
		if f.release(unknown) {
			t.Fatal("release of an unknown order reported a release")
		}
		if s := f.stock(); s != 2 {
			t.Errorf("stock = %d, want 2", s)
		}
		if n := f.rdb.Exists(f.ctx, f.keys.Released(unknown)).Val(); n != 0 {
			t.Error("an unknown order got a released marker")
		}
		f.checkInvariant("unknown release")
	})

	t.Run("released buyer buys again", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t, 2, 1)
		first := f.mustReserve("alice", "k1")
		f.checkInvariant("reserve")
		f.mustReserve("bob", "k1")
		f.checkInvariant("bob's reserve")
		if r := f.reserve("alice", "k2"); r.Outcome != outcome.AlreadyPurchased {
			t.Fatalf("second live order = %+v, want ALREADY_PURCHASED", r)
		}
		if !f.release(first.OrderID) {
			t.Fatal("release reported nothing released")
		}
		f.checkInvariant("release")
		again := f.mustReserve("alice", "k3")
		if again.Slot != 0 || again.OrderID == first.OrderID {
			t.Errorf("rebuy = %+v, want a new order in slot 0", again)
		}
		f.checkInvariant("rebuy")
		if s := f.stock(); s != 0 {
			t.Errorf("stock = %d, want 0", s)
		}
	})
}

func TestReleaseForget(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name       string
		status     string
		releaseKey string // key whose order is released
		forgetKey  string // key named in the release; "" releases without forgetting
		wantFresh  bool
	}{
		{name: "forget the key", status: "EXPIRED", releaseKey: "k", forgetKey: "k", wantFresh: true},
		{name: "keep the key", status: "EXPIRED", releaseKey: "k"},
		{name: "keep the key of a cancelled order", status: "CANCELLED", releaseKey: "k"},
		// A failed order was never the buyer's: its own key is forgotten without being named.
		{name: "failed order forgets its key", status: "FAILED", releaseKey: "k", wantFresh: true},
		// A record is forgotten only while it names the released order.
		{name: "forget a key of another order", status: "EXPIRED", releaseKey: "other", forgetKey: "k"},
		{name: "failed order keeps another order's key", status: "FAILED", releaseKey: "other", forgetKey: "k"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, 5, 2)
			first := f.mustReserve("alice", "k")
			released := first
			if tc.releaseKey != "k" {
				released = f.mustReserve("alice", tc.releaseKey)
			}
			ok, err := f.store.Release(f.ctx, stock.Release{
				SaleID: f.sale.ID, ItemID: f.item, OrderID: released.OrderID, Status: tc.status,
				ForgetUser: "alice", ForgetKey: tc.forgetKey,
			})
			if err != nil || !ok {
				t.Fatalf("release = %v, %v; want true", ok, err)
			}
			stockBefore := f.stock()
			again := f.reserve("alice", "k")
			switch {
			case tc.wantFresh && (again.Outcome != outcome.Reserved || again.Replay || again.OrderID == first.OrderID):
				t.Fatalf("retry after a forgetting release = %+v, want a fresh reservation (not %s)", again, first.OrderID)
			case tc.wantFresh && f.stock() != stockBefore-1:
				t.Errorf("stock %d -> %d, want one unit taken", stockBefore, f.stock())
			case !tc.wantFresh && (again.Outcome != outcome.Reserved || !again.Replay || again.OrderID != first.OrderID):
				t.Fatalf("retry = %+v, want a replay of order %s", again, first.OrderID)
			case !tc.wantFresh && f.stock() != stockBefore:
				t.Errorf("stock %d -> %d, want a replay to take nothing", stockBefore, f.stock())
			}
			f.checkInvariant("retry")
		})
	}
}

func TestLookupOrder(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 5, 1)
	// The reserve script writes the order's reference with the hold: nothing else is called.
	r := f.mustReserve("alice", "k")
	t.Cleanup(func() { f.rdb.Del(context.Background(), stock.OrderRefKey(r.OrderID)) })

	want := stock.OrderState{SaleID: f.sale.ID, ItemID: f.item, UserID: "alice", Shards: 1, Status: "PENDING"}
	if st, ok, err := f.store.LookupOrder(f.ctx, r.OrderID); err != nil || !ok || st != want {
		t.Fatalf("held order: %+v, %v, %v; want %+v", st, ok, err, want)
	}
	ok, err := f.store.Release(f.ctx, stock.Release{SaleID: f.sale.ID, ItemID: f.item, OrderID: r.OrderID, Status: "FAILED"})
	if err != nil || !ok {
		t.Fatalf("release = %v, %v", ok, err)
	}
	want.Status = "FAILED"
	if st, ok, err := f.store.LookupOrder(f.ctx, r.OrderID); err != nil || !ok || st != want {
		t.Fatalf("released order: %+v, %v, %v; want %+v", st, ok, err, want)
	}
	if st, ok, err := f.store.LookupOrder(f.ctx, uuid.Must(uuid.NewV7())); err != nil || ok {
		t.Fatalf("unknown order: %+v, %v, %v; want ok=false", st, ok, err)
	}
}

func TestPreload(t *testing.T) {
	t.Parallel()
	t.Run("keeps a live counter, updates the settings", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t, 10, 1)
		for _, u := range []string{"a", "b", "c"} {
			f.mustReserve(u, "k")
		}
		paused := f.sale
		paused.Paused = true
		actions, err := f.store.Preload(f.ctx, paused, map[string]int64{f.item: 10})
		if err != nil || actions[f.item] != stock.Kept {
			t.Fatalf("second preload did %v, %v; want the counter kept", actions, err)
		}
		if s := f.stock(); s != 7 {
			t.Errorf("stock = %d after a second preload, want 7", s)
		}
		if p := f.rdb.HGet(f.ctx, f.keys.Meta(), "paused").Val(); p != "1" {
			t.Errorf("meta paused = %q, want 1", p)
		}
		if r := f.reserve("d", "k"); r.Outcome != outcome.Paused {
			t.Errorf("reserve after pausing preload = %+v, want PAUSED", r)
		}
	})

	t.Run("first preload loads remaining stock", func(t *testing.T) {
		t.Parallel()
		rdb := testenv.Redis(t)
		s := stock.New(rdb)
		sl := sale.Sale{ID: testenv.ID(t, "stock"), OpensAt: time.Now(), PerUserLimit: 1, HoldTTL: time.Minute,
			Items: []sale.Item{{ID: "x", Quantity: 10}, {ID: "y", Quantity: 6}}}
		t.Cleanup(func() { _ = s.Reset(context.Background(), sl) })
		actions, err := s.Preload(context.Background(), sl, map[string]int64{"x": 4})
		if err != nil || actions["x"] != stock.Loaded || actions["y"] != stock.Loaded {
			t.Fatalf("preload did %v, %v; want x and y loaded", actions, err)
		}
		got, err := s.Snapshot(context.Background(), sl.ID, sl.Items)
		if err != nil || got[0].Stock != 4 || got[1].Stock != 6 {
			t.Fatalf("snapshot %+v, %v; want stock 4 and 6", got, err)
		}
	})

	t.Run("a quantity change moves a live counter by the delta", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t, 10, 1)
		for _, u := range []string{"a", "b", "c"} {
			f.mustReserve(u, "k")
		}
		more := f.sale
		more.Items = []sale.Item{{ID: f.item, Quantity: 15}}
		if actions, err := f.store.Preload(f.ctx, more, nil); err != nil || actions[f.item] != stock.Adjusted {
			t.Fatalf("raising quantity: %v, %v; want adjusted", actions, err)
		}
		if s := f.stock(); s != 12 {
			t.Fatalf("stock = %d after raising 10 -> 15 with 3 held, want 12", s)
		}
		fewer := f.sale
		fewer.Items = []sale.Item{{ID: f.item, Quantity: 4}}
		if actions, err := f.store.Preload(f.ctx, fewer, nil); err != nil || actions[f.item] != stock.Adjusted {
			t.Fatalf("lowering quantity: %v, %v; want adjusted", actions, err)
		}
		if s := f.stock(); s != 1 {
			t.Fatalf("stock = %d after lowering 15 -> 4 with 3 held, want 1", s)
		}
		tooFew := f.sale
		tooFew.Items = []sale.Item{{ID: f.item, Quantity: 2}}
		if _, err := f.store.Preload(f.ctx, tooFew, nil); err == nil || !strings.Contains(err.Error(), "3 units already held or sold") {
			t.Fatalf("lowering below the held units: %v, want a refusal naming 3 units", err)
		}
		if s := f.stock(); s != 1 {
			t.Fatalf("a refused preload changed stock to %d", s)
		}
		if q := f.rdb.HGet(f.ctx, f.keys.Meta(), "quantity").Val(); q != "4" {
			t.Fatalf("a refused preload changed meta quantity to %s", q)
		}
	})

	t.Run("reset removes every key", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t, 1, 1)
		r := f.mustReserve("alice", "k")
		f.reserve("bob", "k") // SOLD_OUT record
		f.release(r.OrderID)  // released marker
		prefix := strings.TrimSuffix(f.keys.Meta(), "meta")
		if n := len(f.rdb.Keys(f.ctx, prefix+"*").Val()); n < 5 {
			t.Fatalf("only %d keys before reset; the test does not exercise it", n)
		}
		if err := f.store.Reset(f.ctx, f.sale); err != nil {
			t.Fatal(err)
		}
		if left := f.rdb.Keys(f.ctx, prefix+"*").Val(); len(left) != 0 {
			t.Errorf("keys left after reset: %v", left)
		}
		if _, err := f.store.Reserve(f.ctx, f.request("carol", "k")); outcome.CodeOf(err) != outcome.NotFound {
			t.Errorf("reserve after reset: %v, want NOT_FOUND", err)
		}
	})

	t.Run("snapshot", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t, 10, 2)
		f.mustReserve("alice", "k1")
		f.mustReserve("alice", "k2")
		f.mustReserve("bob", "k1")
		got, err := f.store.Snapshot(f.ctx, f.sale.ID, []sale.Item{{ID: f.item}, {ID: "never-loaded"}})
		want := []stock.ItemState{
			{ItemID: f.item, Stock: 7, Holds: 3, Buyers: 2, Shards: []stock.ShardState{{Stock: 7, Holds: 3, Buyers: 2}}},
			{ItemID: "never-loaded", Shards: []stock.ShardState{{}}},
		}
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Fatalf("snapshot = %+v, %v; want %+v", got, err, want)
		}
	})
}

// TestResetDeletesOrderRefs: Reset leaves nothing of a sale's live orders behind, not even their
// references (keyed by order id, outside the item's hash tags), on every shard.
func TestResetDeletesOrderRefs(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 8, 1, func(sl *sale.Sale) { sl.Items[0].Shards = 4 })
	var refs []string
	for i := range 6 {
		r := f.mustReserve("buyer-"+strconv.Itoa(i), "k")
		refs = append(refs, stock.OrderRefKey(r.OrderID))
	}
	if n, err := f.rdb.Exists(f.ctx, refs...).Result(); err != nil || n != int64(len(refs)) {
		t.Fatalf("%d of %d order references written by the reserves (%v)", n, len(refs), err)
	}
	if err := f.store.Reset(f.ctx, f.sale); err != nil {
		t.Fatal(err)
	}
	if n, err := f.rdb.Exists(f.ctx, refs...).Result(); err != nil || n != 0 {
		t.Fatalf("%d order references left after Reset (%v), want 0", n, err)
	}
}
