package stock_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"

	"github.com/fsctl/fsctl/internal/checkout/stock"
	"github.com/fsctl/fsctl/internal/contract/outcome"
)

// borrowFixture is a 2-shard item of one unit, which lives in shard 0, and a buyer whose home is
// shard 1: the buyer's reserve must borrow it.
func borrowFixture(t *testing.T) (*fixture, string) {
	t.Helper()
	f := newFixture(t, 1, 1, sharded(2))
	return f, userAt("borrower", 2, 1)
}

func (f *fixture) releaseAt(shard int, id uuid.UUID, status string) bool {
	f.t.Helper()
	ok, err := f.store.Release(f.ctx, stock.Release{SaleID: f.sale.ID, ItemID: f.item, Shard: shard, Shards: f.sale.Items[0].ShardCount(), OrderID: id, Status: status})
	if err != nil {
		f.t.Fatalf("release %s: %v", id, err)
	}
	return ok
}

func (f *fixture) settleAt(shard int, id uuid.UUID) bool {
	f.t.Helper()
	ok, err := f.store.Settle(f.ctx, stock.Settle{SaleID: f.sale.ID, ItemID: f.item, Shard: shard, Shards: f.sale.Items[0].ShardCount(), OrderID: id})
	if err != nil {
		f.t.Fatalf("settle %s: %v", id, err)
	}
	return ok
}

func TestReleaseAfterBorrow(t *testing.T) {
	t.Parallel()
	f, user := borrowFixture(t)
	r := f.mustReserve(user, "k")
	if r.Shard != 1 || r.Borrowed != 1 {
		t.Fatalf("reserve = %+v, want the hold in home shard 1 with 1 unit borrowed", r)
	}
	if got := f.shardStocks(); got[0] != 0 || got[1] != 0 {
		t.Fatalf("stocks %v after the borrow, want [0 0]", got)
	}
	f.checkShards("the borrow")
	if !f.releaseAt(1, r.OrderID, "CANCELLED") {
		t.Fatal("release reported nothing released")
	}
	if f.releaseAt(1, r.OrderID, "CANCELLED") {
		t.Fatal("second release reported a release")
	}
	if got := f.shardStocks(); got[0] != 0 || got[1] != 1 {
		t.Fatalf("stocks %v after the release, want the unit back in home shard 1: [0 1]", got)
	}
	f.checkShards("the release")
}

func TestSettle(t *testing.T) {
	t.Parallel()
	t.Run("settle then release", func(t *testing.T) {
		t.Parallel()
		f, user := borrowFixture(t)
		r := f.mustReserve(user, "k")
		if err := f.store.SetOrderRef(f.ctx, r.OrderID, f.sale.ID, f.item, user, r.Shard, r.Shards); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.rdb.Del(context.Background(), stock.OrderRefKey(r.OrderID)) })
		if !f.settleAt(1, r.OrderID) {
			t.Fatal("settle reported nothing settled")
		}
		if f.settleAt(1, r.OrderID) {
			t.Fatal("second settle reported a settle")
		}
		if f.releaseAt(1, r.OrderID, "EXPIRED") {
			t.Fatal("a paid order was released")
		}
		k := f.shardKeys(1)
		if f.rdb.ZCard(f.ctx, k.Holds()).Val() != 0 || !f.rdb.HExists(f.ctx, k.Orders(), r.OrderID.String()).Val() ||
			f.rdb.HGet(f.ctx, k.Buyers(), user).Val() != "1" || f.rdb.Get(f.ctx, k.Released(r.OrderID)).Val() != "PAID" {
			t.Error("a settled order must leave its hold but keep its record, its buyer's slot and a PAID marker")
		}
		if got := f.shardStocks(); got[0] != 0 || got[1] != 0 {
			t.Errorf("stocks %v, want [0 0]: the unit is sold", got)
		}
		want := stock.OrderState{SaleID: f.sale.ID, ItemID: f.item, UserID: user, Shard: 1, Shards: 2, Status: stock.StatusPaid}
		if st, ok, err := f.store.LookupOrder(f.ctx, r.OrderID); err != nil || !ok || st != want {
			t.Fatalf("LookupOrder = %+v, %v, %v; want %+v", st, ok, err, want)
		}
		if r := f.reserve(user, "k2"); r.Outcome != outcome.AlreadyPurchased {
			t.Errorf("second purchase of a buyer who paid = %+v, want ALREADY_PURCHASED", r)
		}
		holds, err := f.store.Holds(f.ctx, f.sale.ID, f.item, 1, f.sale.Items[0].ShardCount())
		if err != nil || len(holds) != 0 {
			t.Errorf("Holds = %+v, %v; want no live hold", holds, err)
		}
	})

	t.Run("release then settle", func(t *testing.T) {
		t.Parallel()
		f, user := borrowFixture(t)
		r := f.mustReserve(user, "k")
		if !f.releaseAt(1, r.OrderID, "CANCELLED") {
			t.Fatal("release reported nothing released")
		}
		if f.settleAt(1, r.OrderID) {
			t.Fatal("a released order was settled")
		}
		if m := f.rdb.Get(f.ctx, f.shardKeys(1).Released(r.OrderID)).Val(); m != "CANCELLED" {
			t.Errorf("marker = %q, want CANCELLED", m)
		}
		f.checkShards("release then settle")
	})
}

func TestShardedIdempotency(t *testing.T) {
	t.Parallel()
	t.Run("failed release forgets the key", func(t *testing.T) {
		t.Parallel()
		f, user := borrowFixture(t)
		r := f.mustReserve(user, "k")
		if !f.releaseAt(1, r.OrderID, "FAILED") {
			t.Fatal("release reported nothing released")
		}
		again := f.mustReserve(user, "k")
		if again.OrderID == r.OrderID || again.Shard != 1 {
			t.Fatalf("retry = %+v, want a fresh order in shard 1", again)
		}
		f.checkShards("the retry")
	})

	t.Run("sold out is remembered", func(t *testing.T) {
		t.Parallel()
		f, user := borrowFixture(t)
		other := userAt("other", 2, 0)
		won := f.mustReserve(other, "k")
		if r := f.reserve(user, "k"); r.Outcome != outcome.SoldOut || r.Replay || r.Shard != 1 {
			t.Fatalf("first try = %+v, want a fresh SOLD_OUT from shard 1", r)
		}
		if !f.releaseAt(0, won.OrderID, "EXPIRED") {
			t.Fatal("release reported nothing released")
		}
		if r := f.reserve(user, "k"); r.Outcome != outcome.SoldOut || !r.Replay || r.Borrowed != 0 {
			t.Fatalf("retry = %+v, want the remembered SOLD_OUT without borrowing", r)
		}
		f.checkShards("the retry")
	})

	// NoBorrow is the sold-out flag's fast path: one call on the home shard, whose answers are
	// still the script's own (the issue: a winner clicking again must hear ALREADY_PURCHASED).
	t.Run("no borrowing gives the script's answers", func(t *testing.T) {
		t.Parallel()
		f, user := borrowFixture(t)
		noBorrow := func(user, key string) stock.Reservation {
			t.Helper()
			r := f.request(user, key)
			r.NoBorrow = true
			rv, err := f.store.Reserve(f.ctx, r)
			if err != nil {
				t.Fatalf("reserve(%q, %q) without borrowing: %v", user, key, err)
			}
			return rv
		}
		if r := noBorrow(user, "k"); r.Outcome != outcome.SoldOut || r.Replay || r.Borrowed != 0 || r.Shard != 1 {
			t.Fatalf("empty home shard = %+v, want a fresh SOLD_OUT from shard 1 without borrowing", r)
		}
		if got := f.shardStocks(); got[0] != 1 || got[1] != 0 {
			t.Fatalf("stocks %v, want the unit left in shard 0: [1 0]", got)
		}
		if r := f.reserve(user, "k"); r.Outcome != outcome.SoldOut || !r.Replay {
			t.Fatalf("retry of the key = %+v, want the remembered SOLD_OUT (same key, same answer)", r)
		}
		winner := userAt("winner", 2, 0)
		won := noBorrow(winner, "w1")
		if won.Outcome != outcome.Reserved || won.Replay || won.Shard != 0 {
			t.Fatalf("a unit in the home shard = %+v, want a fresh RESERVED in shard 0", won)
		}
		if r := noBorrow(winner, "w2"); r.Outcome != outcome.AlreadyPurchased {
			t.Fatalf("the winner with a new key = %+v, want ALREADY_PURCHASED", r)
		}
		if r := noBorrow(winner, "w1"); r.Outcome != outcome.Reserved || !r.Replay || r.OrderID != won.OrderID {
			t.Fatalf("the winner's retry = %+v, want a replay of order %s", r, won.OrderID)
		}
		f.checkShards("the sold-out path")
	})
}

func TestOrderRefShards(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 5, 1)
	id := uuid.Must(uuid.NewV7())
	t.Cleanup(func() { f.rdb.Del(context.Background(), stock.OrderRefKey(id)) })
	r, err := f.store.Reserve(f.ctx, stock.Request{SaleID: f.sale.ID, ItemID: f.item, UserID: "alice", IdemKey: "k", OrderID: id})
	if err != nil || r.Outcome != outcome.Reserved {
		t.Fatalf("reserve = %+v, %v", r, err)
	}
	// A reference written before shards existed has three fields and means shard 0.
	if err := f.rdb.Set(f.ctx, stock.OrderRefKey(id), f.sale.ID+"\n"+f.item+"\nalice", time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	want := stock.OrderState{SaleID: f.sale.ID, ItemID: f.item, UserID: "alice", Shards: 1, Status: stock.StatusPending}
	if st, ok, err := f.store.LookupOrder(f.ctx, id); err != nil || !ok || st != want {
		t.Fatalf("LookupOrder of a 3-field reference = %+v, %v, %v; want %+v", st, ok, err, want)
	}
	// The four fields of an fsctl that did not spread shards name keys that moved: refused, not misread.
	if err := f.rdb.Set(f.ctx, stock.OrderRefKey(id), f.sale.ID+"\n"+f.item+"\nalice\n0", time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	if _, _, err := f.store.LookupOrder(f.ctx, id); err == nil || !strings.Contains(err.Error(), "re-create the sale") {
		t.Fatalf("LookupOrder of a 4-field reference: %v, want a refusal that says to re-create the sale", err)
	}
}

func TestHolds(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 5, 2, sharded(2))
	user := userAt("holder", 2, 1)
	r1, r2 := f.mustReserve(user, "k1"), f.mustReserve(user, "k2")
	holds, err := f.store.Holds(f.ctx, f.sale.ID, f.item, 1, f.sale.Items[0].ShardCount())
	if err != nil || len(holds) != 2 {
		t.Fatalf("Holds = %+v, %v; want 2", holds, err)
	}
	for i, r := range []stock.Reservation{r1, r2} {
		want := stock.Hold{OrderID: r.OrderID, UserID: user, Slot: r.Slot, IdemKey: "k" + strconv.Itoa(i+1), ExpiresAt: r.ExpiresAt, Shard: 1}
		if holds[i] != want && holds[1-i] != want {
			t.Errorf("Holds = %+v, missing %+v", holds, want)
		}
	}

	// Many holds sharing one expiry millisecond page across ZRANGE pages without loss or repeats;
	// a record written before the idempotency key was kept reads with an empty key.
	k := f.shardKeys(0)
	const many = 2500
	exp := time.Now().Add(time.Hour).UnixMilli()
	pipe := f.rdb.Pipeline()
	for i := range many {
		id := uuid.Must(uuid.NewV7()).String()
		pipe.ZAdd(f.ctx, k.Holds(), redis.Z{Score: float64(exp + int64(i/1200)), Member: id})
		pipe.HSet(f.ctx, k.Orders(), id, "u"+strconv.Itoa(i)+"\n0")
	}
	if _, err := pipe.Exec(f.ctx); err != nil {
		t.Fatal(err)
	}
	holds, err = f.store.Holds(f.ctx, f.sale.ID, f.item, 0, f.sale.Items[0].ShardCount())
	if err != nil || len(holds) != many {
		t.Fatalf("Holds of shard 0 = %d holds, %v; want %d", len(holds), err, many)
	}
	seen := map[uuid.UUID]bool{}
	for _, h := range holds {
		if seen[h.OrderID] || h.IdemKey != "" || h.Shard != 0 {
			t.Fatalf("hold %+v listed twice or misread", h)
		}
		seen[h.OrderID] = true
	}
}

func TestSetPaused(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 8, 1, sharded(4))
	if err := f.store.SetPaused(f.ctx, f.sale, true); err != nil {
		t.Fatal(err)
	}
	for k := range 4 {
		if r := f.reserve(userAt("p", 4, k), "k"); r.Outcome != outcome.Paused || r.Replay {
			t.Fatalf("buyer of shard %d while paused: %+v, want a fresh PAUSED", k, r)
		}
	}
	if err := f.store.SetPaused(f.ctx, f.sale, false); err != nil {
		t.Fatal(err)
	}
	for k := range 4 {
		f.mustReserve(userAt("p", 4, k), "k")
	}
	f.checkShards("resume")
}

// universal hides the *redis.Client type, so the store must pipeline WAIT with the script.
type universal struct{ redis.UniversalClient }

func TestWaitReplicas(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name      string
		pipelined bool
	}{{"same connection", false}, {"pipelined", true}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f, user := borrowFixture(t)
			if tc.pipelined {
				f.store = stock.New(universal{f.rdb})
			}
			req := f.request(user, "k")
			req.WaitReplicas, req.WaitTimeout = 1, 20*time.Millisecond
			// The local Redis has no replica: WAIT answers 0 after its timeout, and that is no error.
			r, err := f.store.Reserve(f.ctx, req)
			if err != nil || r.Outcome != outcome.Reserved || r.Replay || r.Replicas != 0 || r.Borrowed != 1 {
				t.Fatalf("reserve = %+v, %v; want a fresh borrowed RESERVED acknowledged by 0 replicas", r, err)
			}
			if r, err := f.store.Reserve(f.ctx, req); err != nil || !r.Replay || r.Replicas != -1 {
				t.Fatalf("replay = %+v, %v; want Replicas -1 (no WAIT for a replay)", r, err)
			}
			other := f.request(userAt("nowait", 2, 0), "k")
			other.WaitReplicas, other.WaitTimeout = 1, 20*time.Millisecond
			if r, err := f.store.Reserve(f.ctx, other); err != nil || r.Outcome != outcome.SoldOut || r.Replicas != -1 {
				t.Fatalf("sold-out answer = %+v, %v; want SOLD_OUT with Replicas -1", r, err)
			}
			f.checkShards("reserves with replica waits")
		})
	}
	t.Run("not asked", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t, 1, 1)
		if r := f.mustReserve("alice", "k"); r.Replicas != -1 {
			t.Fatalf("Replicas = %d without WaitReplicas, want -1", r.Replicas)
		}
	})
}

func TestScriptsLoaded(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 1, 1)
	if err := f.store.LoadScripts(f.ctx); err != nil {
		t.Fatal(err)
	}
	if ok, err := f.store.ScriptsLoaded(f.ctx); err != nil || !ok {
		t.Fatalf("ScriptsLoaded = %v, %v after LoadScripts", ok, err)
	}
}
