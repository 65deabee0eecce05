package stock_test

import (
	"context"
	"errors"
	"math/bits"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/fsctl/fsctl/internal/checkout/stock"
	"github.com/fsctl/fsctl/internal/contract/outcome"
	"github.com/fsctl/fsctl/internal/contract/sale"
	"github.com/fsctl/fsctl/internal/platform/redisconn"
	"github.com/fsctl/fsctl/lua"
)

// sharded splits the fixture's item over n shards.
func sharded(n int) func(*sale.Sale) { return func(s *sale.Sale) { s.Items[0].Shards = n } }

// userAt returns the first user id prefix<i> whose home shard is want.
func userAt(prefix string, shards, want int) string {
	for i := 0; ; i++ {
		if u := prefix + strconv.Itoa(i); stock.HomeShard(u, shards) == want {
			return u
		}
	}
}

func (f *fixture) shards() int { return f.sale.Items[0].ShardCount() }

func (f *fixture) shardKeys(k int) stock.Keys {
	return stock.ShardKeys(f.sale.ID, f.item, k, f.sale.Items[0].ShardCount())
}

func (f *fixture) snapshot() stock.ItemState {
	f.t.Helper()
	st, err := f.store.Snapshot(f.ctx, f.sale.ID, f.sale.Items)
	if err != nil {
		f.t.Fatalf("snapshot: %v", err)
	}
	return st[0]
}

// shardStocks reads every shard's counter.
// stockOf reads shard k's counter of the item split into n shards.
func (f *fixture) stockOf(k, n int) int64 {
	f.t.Helper()
	v, err := f.rdb.Get(f.ctx, stock.ShardKeys(f.sale.ID, f.item, k, n).Stock()).Int64()
	if err != nil && !errors.Is(err, redis.Nil) {
		f.t.Fatalf("stock of shard %d of %d: %v", k, n, err)
	}
	return v
}

func (f *fixture) shardStocks() []int64 {
	f.t.Helper()
	out := make([]int64, f.shards())
	for k := range out {
		n, err := f.rdb.Get(f.ctx, f.shardKeys(k).Stock()).Int64()
		if err != nil && !errors.Is(err, redis.Nil) {
			f.t.Fatalf("stock of shard %d: %v", k, err)
		}
		out[k] = n
	}
	return out
}

// checkShards asserts what no interleaving may break, shard by shard: no counter below zero; every
// unit on sale (in a counter or in transit) or held, none paid; every order record at its buyer's
// home shard with a hold; every buyer record equal to the slots of the buyer's orders, within the
// limit. It returns the snapshot it checked.
func (f *fixture) checkShards(step string) stock.ItemState {
	f.t.Helper()
	st := f.snapshot()
	if q := f.sale.Items[0].Quantity; st.Stock+st.Holds != q {
		f.t.Fatalf("after %s: stock %d (in transit included) + holds %d != quantity %d", step, st.Stock, st.Holds, q)
	}
	for k, sh := range st.Shards {
		keys := f.shardKeys(k)
		if sh.Stock < 0 {
			f.t.Fatalf("after %s: shard %d stock %d", step, k, sh.Stock)
		}
		orders := f.rdb.HGetAll(f.ctx, keys.Orders()).Val()
		masks := f.rdb.HGetAll(f.ctx, keys.Buyers()).Val()
		if int64(len(orders)) != sh.Holds {
			f.t.Fatalf("after %s: shard %d has %d holds and %d order records", step, k, sh.Holds, len(orders))
		}
		slots := map[string]int64{}
		for id, rec := range orders {
			fields := strings.Split(rec, "\n")
			slot, err := strconv.Atoi(fields[1])
			if len(fields) != 3 || err != nil || slot >= f.sale.PerUserLimit || slots[fields[0]]&(1<<slot) != 0 {
				f.t.Fatalf("after %s: shard %d orders[%s] = %q (slots so far %b)", step, k, id, rec, slots[fields[0]])
			}
			if home := stock.HomeShard(fields[0], f.shards()); home != k {
				f.t.Fatalf("after %s: order %s of %s is in shard %d, not its home %d", step, id, fields[0], k, home)
			}
			if f.rdb.ZScore(f.ctx, keys.Holds(), id).Err() != nil {
				f.t.Fatalf("after %s: order %s has a record but no hold", step, id)
			}
			slots[fields[0]] |= 1 << slot
		}
		for user, m := range masks {
			mask, _ := strconv.ParseInt(m, 10, 64)
			if mask != slots[user] || bits.OnesCount64(uint64(mask)) > f.sale.PerUserLimit {
				f.t.Fatalf("after %s: shard %d buyer %s mask %b, order slots %b", step, k, user, mask, slots[user])
			}
		}
		if len(masks) != len(slots) {
			f.t.Fatalf("after %s: shard %d has %d buyer records for %d buyers with orders", step, k, len(masks), len(slots))
		}
	}
	return st
}

func TestShardKeys(t *testing.T) {
	t.Parallel()
	if a, b := stock.ItemKeys("s", "i").Stock(), stock.ShardKeys("s", "i", 0, 1).Stock(); a != b || a != "{fs:s:i}:stock" {
		t.Errorf("shard 0 of 1 stock key %q, item key %q; want both {fs:s:i}:stock", b, a)
	}
	// A sharded item's tags are part of the data format too: a change strands every live shard.
	for _, c := range []struct {
		k, n int
		want string
	}{{0, 3, "{fs:s1:hot~10}:ledger"}, {1, 3, "{fs:s1:hot:1~129}:ledger"}, {2, 3, "{fs:s1:hot:2}:ledger"}} {
		if got := stock.ShardKeys("s1", "hot", c.k, c.n).Ledger(); got != c.want {
			t.Errorf("shard %d of %d ledger key = %q, want %q", c.k, c.n, got, c.want)
		}
	}
	// Every shard of n lands in its own n-th of the slots, so a cluster whose m masters own equal
	// contiguous ranges holds n <= m shards on n different masters, and more as evenly as it can.
	for _, n := range []int{2, 3, 4, 8, 16, 64} {
		for _, masters := range []int{3, 5, 8} {
			per := map[int]int{}
			for k := range n {
				keys := stock.ShardKeys("s1", "hot", k, n)
				slot, _, _, ok := redisconn.SharedSlot([]string{keys.Meta(), keys.Stock(), keys.Buyers(), keys.Holds(),
					keys.Orders(), keys.Idem("u", "k"), keys.Ledger(), keys.Applied(), keys.TransferSeq()})
				if !ok {
					t.Fatalf("shard %d of %d: its keys are in more than one slot", k, n)
				}
				if lo, hi := k*redisconn.Slots/n, (k+1)*redisconn.Slots/n; slot < lo || slot >= hi {
					t.Errorf("shard %d of %d in slot %d, outside its range %d..%d", k, n, slot, lo, hi-1)
				}
				per[slot*masters/redisconn.Slots]++
			}
			if most, least := maxOf(per, masters), minOf(per, masters); n >= masters && most-least > 1 ||
				n < masters && most > 1 {
				t.Errorf("%d shards on %d even masters: %v", n, masters, per)
			}
		}
	}
	// The placement of a user is part of the data format: a change strands live buyer records.
	for u, want := range map[string][2]int{"": {4, 3}, "alice": {5, 2}, "42": {2, 1}, "user@example.com": {3, 0}} {
		if got := [2]int{stock.HomeShard(u, 7), stock.HomeShard(u, 4)}; got != want {
			t.Errorf("HomeShard(%q, 7 and 4) = %v, want %v", u, got, want)
		}
		if got := stock.HomeShard(u, 1); got != 0 {
			t.Errorf("HomeShard(%q, 1) = %d, want 0", u, got)
		}
	}
	// Sequential ids spread evenly, even over a power-of-two shard count.
	per := make([]int, 4)
	for i := range 4096 {
		per[stock.HomeShard("user"+strconv.Itoa(i), 4)]++
	}
	for k, n := range per {
		if n < 900 || n > 1150 {
			t.Errorf("shard %d got %d of 4096 sequential users, want about 1024", k, n)
		}
	}
}

func TestShardedContention(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name        string
		limit, keys int
	}{
		{"one key per buyer", 1, 1},
		{"limit 2, three keys per buyer", 2, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			const quantity, buyers, shards, workers = 200, 2000, 4, 64
			f := newFixture(t, quantity, tc.limit, sharded(shards))
			order := skewedOrder(buyers, shards)
			var next, reserved, borrowed atomic.Int64
			perUser := make([]int, buyers) // each user is served by one goroutine, its keys in turn
			start := make(chan struct{})
			var wg sync.WaitGroup
			for range workers {
				wg.Go(func() {
					<-start
					for i := int(next.Add(1) - 1); i < buyers; i = int(next.Add(1) - 1) {
						u := order[i]
						user := "u" + strconv.Itoa(u)
						for key := range tc.keys {
							r, err := f.store.Reserve(f.ctx, f.request(user, "k"+strconv.Itoa(key)))
							switch {
							case err != nil:
								t.Error(err)
								return
							case r.Replay || r.Shard != stock.HomeShard(user, shards):
								t.Errorf("%s: %+v, want a fresh answer from home shard %d", user, r, stock.HomeShard(user, shards))
							case r.Outcome == outcome.Reserved:
								reserved.Add(1)
								perUser[u]++
							case r.Outcome != outcome.SoldOut && r.Outcome != outcome.AlreadyPurchased:
								t.Errorf("%s: unexpected %+v", user, r)
							}
							borrowed.Add(int64(r.Borrowed))
						}
					}
				})
			}
			close(start)
			wg.Wait()

			if n := reserved.Load(); n != quantity {
				t.Fatalf("%d RESERVED, want exactly %d", n, quantity)
			}
			for u, n := range perUser {
				if n > tc.limit {
					t.Errorf("user u%d reserved %d units, limit %d", u, n, tc.limit)
				}
			}
			st := f.checkShards("the race")
			for _, sh := range st.Shards {
				if sh.Stock != 0 || sh.InTransit != 0 {
					t.Errorf("shard %d: stock %d, in transit %d; want 0 and 0", sh.Shard, sh.Stock, sh.InTransit)
				}
				if n := f.rdb.HLen(f.ctx, f.shardKeys(sh.Shard).Ledger()).Val(); n != 0 {
					t.Errorf("shard %d: %d ledger entries left", sh.Shard, n)
				}
			}
			if st.Holds != quantity {
				t.Errorf("Σ holds = %d, want %d", st.Holds, quantity)
			}
			if borrowed.Load() == 0 {
				t.Error("no unit was borrowed: the race did not exercise the transfers")
			}
			t.Logf("%d units borrowed between shards", borrowed.Load())
		})
	}
}

// skewedOrder is the order buyers u0..u<n-1> arrive in: a seeded shuffle in which buyers of the lower
// half of the shards come three times as often as the others, so those shards run dry first and
// their buyers borrow while the other shards' own buyers are still buying.
func skewedOrder(n, shards int) []int {
	rng := rand.New(rand.NewPCG(20261130, 4))
	var low, high []int
	for _, u := range rng.Perm(n) {
		if stock.HomeShard("u"+strconv.Itoa(u), shards) < shards/2 {
			low = append(low, u)
		} else {
			high = append(high, u)
		}
	}
	out := make([]int, 0, n)
	for len(low)+len(high) > 0 {
		for range 3 {
			if len(low) > 0 {
				out, low = append(out, low[0]), low[1:]
			}
		}
		if len(high) > 0 {
			out, high = append(out, high[0]), high[1:]
		}
	}
	return out
}

// TestBorrowKeepsLimit has one buyer, whose home shard is empty, fire many keys at once: every one of
// them must borrow, and the limit must still hold.
func TestBorrowKeepsLimit(t *testing.T) {
	t.Parallel()
	const shards, limit, keys = 4, 2, 40
	f := newFixture(t, 40, limit, sharded(shards))
	user := userAt("hammer", shards, 1)
	// Empty the home shard as a transfer would: its 10 units move to shard 2.
	if err := f.rdb.DecrBy(f.ctx, f.shardKeys(1).Stock(), 10).Err(); err != nil {
		t.Fatal(err)
	}
	if err := f.rdb.IncrBy(f.ctx, f.shardKeys(2).Stock(), 10).Err(); err != nil {
		t.Fatal(err)
	}
	var got [keys]stock.Reservation
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range keys {
		wg.Go(func() {
			<-start
			r, err := f.store.Reserve(f.ctx, f.request(user, "k"+strconv.Itoa(i)))
			if err != nil {
				t.Error(err)
			}
			got[i] = r
		})
	}
	close(start)
	wg.Wait()
	reserved, borrowed := 0, 0
	for _, r := range got {
		switch r.Outcome {
		case outcome.Reserved:
			reserved++
			if r.Shard != 1 {
				t.Errorf("hold in shard %d, want the home shard 1", r.Shard)
			}
		case outcome.AlreadyPurchased:
		default:
			t.Errorf("unexpected %+v", r)
		}
		borrowed += r.Borrowed
	}
	if reserved != limit || borrowed < limit {
		t.Fatalf("%d reserved with %d units borrowed; want %d reserved, all borrowed", reserved, borrowed, limit)
	}
	if m := f.rdb.HGet(f.ctx, f.shardKeys(1).Buyers(), user).Val(); m != "3" {
		t.Errorf("buyer mask = %q, want 3 (slots 0 and 1)", m)
	}
	st := f.checkShards("the hammering")
	for _, sh := range st.Shards {
		if sh.InTransit != 0 || f.rdb.HLen(f.ctx, f.shardKeys(sh.Shard).Ledger()).Val() != 0 {
			t.Errorf("shard %d: ledger left behind (in transit %d)", sh.Shard, sh.InTransit)
		}
	}
}

// TestTransferCrash stops a transfer after it took a unit out of its shard, as a crash would.
func TestTransferCrash(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 8, 1, sharded(4)) // 2 units per shard
	out, apply := redis.NewScript(lua.TransferOut), redis.NewScript(lua.ApplyTransfer)
	transferOut := func(from, to int) string {
		t.Helper()
		k := f.shardKeys(from)
		res, err := out.Run(f.ctx, f.rdb, []string{k.Stock(), k.Ledger(), k.TransferSeq()}, 1, to, from).StringSlice()
		if err != nil || len(res) != 2 || res[0] != "1" {
			t.Fatalf("transfer_out = %v, %v", res, err)
		}
		return res[1]
	}
	repair := func(olderThan time.Duration, want int) {
		t.Helper()
		if n, err := f.store.RepairTransfers(f.ctx, f.sale.ID, f.item, 4, olderThan); err != nil || n != want {
			t.Fatalf("RepairTransfers(%s) = %d, %v; want %d units", olderThan, n, err, want)
		}
	}

	transferOut(2, 0)
	mid := f.checkShards("a transfer cut short")
	if mid.Stock != 8 || mid.Shards[2].Stock != 1 || mid.Shards[2].InTransit != 1 {
		t.Fatalf("snapshot mid-transfer = %+v; want stock 8 with shard 2 at 1 plus 1 in transit", mid)
	}
	repair(time.Hour, 0) // too young: a live reserve may be about to apply it
	repair(0, 1)
	after := f.checkShards("the repair")
	if after.Stock != 8 || after.Shards[0].Stock != 3 || after.Shards[2].InTransit != 0 {
		t.Fatalf("snapshot after repair = %+v; want stock 8 with shard 0 at 3, nothing in transit", after)
	}
	repair(0, 0)

	// A transfer its reserve applied, whose ledger entry the crash left: repair only deletes it.
	id := transferOut(3, 1)
	k1 := f.shardKeys(1)
	if err := apply.Run(f.ctx, f.rdb, []string{k1.Applied(), k1.Stock()}, id, 1).Err(); err != nil {
		t.Fatal(err)
	}
	if st := f.checkShards("an applied transfer"); st.Stock != 8 || st.Shards[3].InTransit != 0 {
		t.Fatalf("snapshot = %+v; want stock 8, the applied entry not in transit", st)
	}
	repair(0, 0)
	if n := f.rdb.HLen(f.ctx, f.shardKeys(3).Ledger()).Val(); n != 0 {
		t.Errorf("%d ledger entries left after repair", n)
	}
	if got := f.shardStocks(); got[0] != 3 || got[1] != 3 || got[2] != 1 || got[3] != 1 {
		t.Errorf("shard stocks %v, want [3 3 1 1]", got)
	}
	f.checkShards("the second repair")
}

func TestShardedPreload(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 10, 1, sharded(4))
	preload := func(quantity int64, shards int, remaining map[string]int64) (stock.PreloadAction, error) {
		sl := f.sale
		sl.Items = []sale.Item{{ID: f.item, Quantity: quantity, Shards: shards}}
		acts, err := f.store.Preload(f.ctx, sl, remaining)
		return acts[f.item], err
	}
	metas := func() (quantities []string) {
		for k := range f.shards() {
			m := f.rdb.HMGet(f.ctx, f.shardKeys(k).Meta(), "quantity", "shards").Val()
			quantities = append(quantities, m[0].(string)+"/"+m[1].(string))
		}
		return quantities
	}
	// The fixture loaded 10 as 3,3,2,2. Reset and load 6 remaining (4 sold) instead.
	if err := f.store.Reset(f.ctx, f.sale); err != nil {
		t.Fatal(err)
	}
	if a, err := preload(10, 4, map[string]int64{f.item: 6}); err != nil || a != stock.Loaded {
		t.Fatalf("preload = %v, %v; want loaded", a, err)
	}
	if got, want := f.shardStocks(), []int64{2, 2, 1, 1}; !equal(got, want) {
		t.Errorf("stocks %v, want %v", got, want)
	}
	if got := strings.Join(metas(), " "); got != "3/4 3/4 2/4 2/4" {
		t.Errorf("meta quantity/shards %s, want 3/4 3/4 2/4 2/4", got)
	}
	if a, err := preload(15, 4, nil); err != nil || a != stock.Adjusted {
		t.Fatalf("raising to 15 = %v, %v; want adjusted", a, err)
	}
	if got, want := f.shardStocks(), []int64{3, 3, 3, 2}; !equal(got, want) {
		t.Errorf("stocks after raising 10 -> 15: %v, want %v", got, want)
	}
	if a, err := preload(11, 4, nil); err != nil || a != stock.Adjusted {
		t.Fatalf("lowering to 11 = %v, %v; want adjusted", a, err)
	}
	if got, want := f.shardStocks(), []int64{2, 2, 2, 1}; !equal(got, want) {
		t.Errorf("stocks after lowering 15 -> 11: %v, want %v", got, want)
	}
	for _, tc := range []struct {
		quantity int64
		shards   int
		want     string
	}{
		{3, 4, "below the 4 units already held or sold"},
		{11, 2, "reset the item first"},
		{11, 8, "reset the item first"},
		{11, 1, "reset the item first"},
	} {
		if _, err := preload(tc.quantity, tc.shards, nil); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("preload quantity %d over %d shards: %v; want a refusal with %q", tc.quantity, tc.shards, err, tc.want)
		}
		if got, want := f.shardStocks(), []int64{2, 2, 2, 1}; !equal(got, want) {
			t.Fatalf("a refused preload changed the stocks to %v", got)
		}
		if got := strings.Join(metas(), " "); got != "3/4 3/4 3/4 2/4" {
			t.Fatalf("a refused preload changed the metas to %s", got)
		}
	}

	if err := f.store.Reset(f.ctx, f.sale); err != nil {
		t.Fatal(err)
	}
	if left := f.rdb.Keys(f.ctx, "{fs:"+f.sale.ID+":*").Val(); len(left) != 0 {
		t.Fatalf("keys left after reset: %v", left)
	}
	if a, err := preload(11, 2, nil); err != nil || a != stock.Loaded {
		t.Fatalf("preload over 2 shards after a reset = %v, %v; want loaded", a, err)
	}
	if got, want := []int64{f.stockOf(0, 2), f.stockOf(1, 2)}, []int64{6, 5}; !equal(got, want) {
		t.Errorf("stocks %v, want %v", got, want)
	}
}

func equal(a, b []int64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestRemaining sums the shards of several items in one call.
func TestRemaining(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 10, 1, sharded(3))
	f.mustReserve("alice", "k")
	got, err := f.store.Remaining(context.Background(), []stock.ItemRef{
		{SaleID: f.sale.ID, ItemID: f.item, Shards: 3},
		{SaleID: f.sale.ID, ItemID: "never-loaded"},
	})
	if err != nil || len(got) != 2 || got[0] != 9 || got[1] != 0 {
		t.Fatalf("Remaining = %v, %v; want [9 0]", got, err)
	}
}

// TestTransferBatch borrows several units at once: the ones beyond the buyer's stay in the home shard.
func TestTransferBatch(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 8, 1, sharded(2)) // 4 units per shard
	f.store = stock.New(f.rdb, stock.TransferBatch(3))
	if err := f.rdb.DecrBy(f.ctx, f.shardKeys(1).Stock(), 4).Err(); err != nil {
		t.Fatal(err)
	}
	if err := f.rdb.IncrBy(f.ctx, f.shardKeys(0).Stock(), 4).Err(); err != nil {
		t.Fatal(err)
	}
	r := f.mustReserve(userAt("batch", 2, 1), "k")
	if r.Borrowed != 3 || r.Shard != 1 {
		t.Fatalf("reserve = %+v, want 3 units borrowed into shard 1", r)
	}
	if got, want := f.shardStocks(), []int64{5, 2}; !equal(got, want) {
		t.Errorf("stocks %v, want %v", got, want)
	}
	f.checkShards("a batch transfer")
}

func maxOf(per map[int]int, n int) int {
	m := 0
	for i := range n {
		m = max(m, per[i])
	}
	return m
}

func minOf(per map[int]int, n int) int {
	m := per[0]
	for i := range n {
		m = min(m, per[i])
	}
	return m
}
