package stock_test

import (
	"fmt"
	"math/bits"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/google/uuid"

	"github.com/fsctl/fsctl/internal/checkout/stock"
	"github.com/fsctl/fsctl/internal/contract/outcome"
	"github.com/fsctl/fsctl/internal/contract/sale"
)

// TestReserveContention: 1,000 buyers racing for 100 units get exactly 100 distinct orders and 900
// SOLD_OUT, with the store's round trips batched (the default) and with every call alone: sharing a
// pipeline changes no answer.
func TestReserveContention(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		opts    []stock.Option
		cluster bool
	}{
		{"batched", nil, false},
		{"unbatched", []stock.Option{stock.Batch(0, 0)}, false},
		{"cluster batched", nil, true},
		{"cluster unbatched", []stock.Option{stock.Batch(0, 0)}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			newF := newFixture
			if tc.cluster {
				newF = newClusterFixture
			}
			f := newF(t, 100, 1)
			f.store = stock.New(f.rdb, tc.opts...)
			testReserveContention(t, f)
		})
	}
}

func testReserveContention(t *testing.T, f *fixture) {
	const quantity, buyers = 100, 1000
	start := make(chan struct{})
	results := make([]stock.Reservation, buyers)
	errs := make([]error, buyers)
	var wg sync.WaitGroup
	for i := range buyers {
		wg.Go(func() {
			req := f.request("user-"+strconv.Itoa(i), "key")
			<-start
			results[i], errs[i] = f.store.Reserve(f.ctx, req)
		})
	}
	close(start)
	wg.Wait()

	orderUser := map[string]string{} // order id -> user who got it
	soldOut := 0
	for i, r := range results {
		if errs[i] != nil {
			t.Fatalf("buyer %d: %v", i, errs[i])
		}
		switch {
		case r.Outcome == outcome.Reserved && !r.Replay && r.Slot == 0:
			orderUser[r.OrderID.String()] = "user-" + strconv.Itoa(i)
		case r.Outcome == outcome.SoldOut && !r.Replay:
			soldOut++
		default:
			t.Fatalf("buyer %d: unexpected answer %+v", i, r)
		}
	}
	if len(orderUser) != quantity || soldOut != buyers-quantity {
		t.Fatalf("%d distinct reserved orders and %d SOLD_OUT, want %d and %d", len(orderUser), soldOut, quantity, buyers-quantity)
	}
	if s := f.stock(); s != 0 {
		t.Errorf("stock = %d, want 0", s)
	}
	holds, err := f.rdb.ZRange(f.ctx, f.keys.Holds(), 0, -1).Result()
	if err != nil {
		t.Fatal(err)
	}
	if len(holds) != quantity {
		t.Errorf("holds has %d members, want %d", len(holds), quantity)
	}
	for _, id := range holds {
		if _, ok := orderUser[id]; !ok {
			t.Errorf("hold %s is not an order any buyer was told about", id)
		}
	}
	orders, err := f.rdb.HGetAll(f.ctx, f.keys.Orders()).Result()
	if err != nil {
		t.Fatal(err)
	}
	if len(orders) != quantity {
		t.Errorf("orders hash has %d entries, want %d", len(orders), quantity)
	}
	for id, rec := range orders {
		if want := orderUser[id] + "\n0\nkey"; rec != want {
			t.Errorf("orders[%s] = %q, want %q", id, rec, want)
		}
	}
	if n := f.rdb.HLen(f.ctx, f.keys.Buyers()).Val(); n != quantity {
		t.Errorf("buyers hash has %d fields, want %d", n, quantity)
	}
}

// TestRandomInterleaving runs reserves (fresh keys and retries) and releases (double releases and
// forgetting ones included) of many users from many goroutines, on an unsharded item and on one
// split over 4 shards (borrowing included), then checks the invariants.
func TestRandomInterleaving(t *testing.T) {
	t.Parallel()
	for _, shards := range []int{1, 4} {
		t.Run("shards "+strconv.Itoa(shards), func(t *testing.T) {
			t.Parallel()
			testRandomInterleaving(t, newFixture, shards)
		})
		// On the cluster the 4 shards' hash tags land on different masters: borrowing moves
		// units between nodes.
		t.Run("cluster shards "+strconv.Itoa(shards), func(t *testing.T) {
			t.Parallel()
			testRandomInterleaving(t, newClusterFixture, shards)
		})
	}
}

func testRandomInterleaving(t *testing.T, newF func(*testing.T, int64, int, ...func(*sale.Sale)) *fixture, shards int) {
	const (
		seed       = 20240601
		goroutines = 20
		users      = 50
		limit      = 2
		quantity   = 30
		opsEach    = 150
	)
	t.Logf("seed %d", seed)
	f := newF(t, quantity, limit, sharded(shards))

	type held struct {
		id        uuid.UUID
		user, key string
		shard     int
	}
	var (
		mu                 sync.Mutex
		orders             []held
		reserved, released atomic.Int64
		borrowed           atomic.Int64
	)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(seed, uint64(g)))
			lastKey := map[string]string{}
			<-start
			for op := range opsEach {
				user := "u" + strconv.Itoa(rng.IntN(users))
				if rng.IntN(10) < 6 {
					key, ok := lastKey[user]
					if !ok || rng.IntN(4) != 0 { // a quarter of reserves retry the last key
						key = fmt.Sprintf("g%d-%d", g, op)
						lastKey[user] = key
					}
					req := f.request(user, key)
					r, err := f.store.Reserve(f.ctx, req)
					if err != nil {
						t.Error(err)
						return
					}
					borrowed.Add(int64(r.Borrowed))
					if r.Outcome == outcome.Reserved && !r.Replay {
						reserved.Add(1)
						mu.Lock()
						orders = append(orders, held{r.OrderID, user, key, r.Shard})
						mu.Unlock()
					}
					continue
				}
				mu.Lock()
				if len(orders) == 0 {
					mu.Unlock()
					continue
				}
				h := orders[rng.IntN(len(orders))] // may be released already: double releases
				mu.Unlock()
				rel := stock.Release{SaleID: f.sale.ID, ItemID: f.item, Shard: h.shard, Shards: f.sale.Items[0].ShardCount(), OrderID: h.id, Status: "EXPIRED"}
				if rng.IntN(2) == 0 {
					rel.ForgetUser, rel.ForgetKey = h.user, h.key
				}
				ok, err := f.store.Release(f.ctx, rel)
				if err != nil {
					t.Error(err)
					return
				}
				if ok {
					released.Add(1)
				}
			}
		})
	}
	// Watch the invariant while the scripts run: counts reads in one MULTI (one node only; on a
	// cluster the check after the run reads the quiet sale).
	done := make(chan struct{})
	watched := make(chan error, 1)
	go func() {
		defer close(watched)
		for f.atomic() {
			select {
			case <-done:
				return
			default:
			}
			if err := f.invariant(); err != nil {
				watched <- err
				return
			}
		}
	}()
	close(start)
	wg.Wait()
	close(done)
	if err := <-watched; err != nil {
		t.Errorf("during the run: %v", err)
	}

	f.checkInvariant("the run")
	st := f.checkShards("the run")
	stockN, holds := st.Stock, st.Holds
	if want := reserved.Load() - released.Load(); holds != want {
		t.Errorf("holds = %d, want %d reserved - %d released", holds, reserved.Load(), released.Load())
	}
	t.Logf("%d reserved, %d released, %d borrowed, stock %d, holds %d", reserved.Load(), released.Load(), borrowed.Load(), stockN, holds)
	if reserved.Load() < quantity || released.Load() == 0 {
		t.Errorf("run too tame to test anything: %d reserved, %d released", reserved.Load(), released.Load())
	}
	if shards > 1 && borrowed.Load() == 0 {
		t.Error("no unit was borrowed: the run did not exercise the transfers")
	}
	if shards > 1 {
		return // checkShards did the per-shard buyer checks below
	}

	masks, err := f.rdb.HGetAll(f.ctx, f.keys.Buyers()).Result()
	if err != nil {
		t.Fatal(err)
	}
	records, err := f.rdb.HGetAll(f.ctx, f.keys.Orders()).Result()
	if err != nil {
		t.Fatal(err)
	}
	slots := map[string]int64{} // user -> bitmask of the slots of the user's live orders
	live := map[string]int{}
	for id, rec := range records {
		fields := strings.Split(rec, "\n")
		if len(fields) != 3 {
			t.Fatalf("orders[%s] = %q, want user, slot and key", id, rec)
		}
		user := fields[0]
		n, err := strconv.Atoi(fields[1])
		if err != nil || n < 0 || n >= limit {
			t.Fatalf("orders[%s] = %q", id, rec)
		}
		if slots[user]&(1<<n) != 0 {
			t.Errorf("user %s holds slot %d twice", user, n)
		}
		slots[user] |= 1 << n
		live[user]++
		if f.rdb.ZScore(f.ctx, f.keys.Holds(), id).Err() != nil {
			t.Errorf("order %s has a record but no hold", id)
		}
	}
	for u := range users {
		user := "u" + strconv.Itoa(u)
		mask, _ := strconv.ParseInt(masks[user], 10, 64)
		if bits.OnesCount64(uint64(mask)) != live[user] || mask != slots[user] || live[user] > limit {
			t.Errorf("user %s: buyers mask %b, live orders %d with slots %b (limit %d)", user, mask, live[user], slots[user], limit)
		}
		if _, ok := masks[user]; ok && mask == 0 {
			t.Errorf("user %s: empty mask left in the buyers hash", user)
		}
	}
}
