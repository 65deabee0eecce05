package stock_test

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"

	"github.com/fsctl/fsctl/internal/checkout/stock"
	"github.com/fsctl/fsctl/internal/contract/outcome"
	"github.com/fsctl/fsctl/internal/contract/sale"
	"github.com/fsctl/fsctl/internal/harness/testenv"
)

// limitedSale is a preloaded sale of several items (the last one split into 4 shards) with a
// per-sale limit, on the given Redis; its keys are reset at the end.
type limitedSale struct {
	t     *testing.T
	ctx   context.Context
	rdb   redis.UniversalClient
	store *stock.Store
	sale  sale.Sale
}

func newLimitedSale(t *testing.T, rdb redis.UniversalClient, perSale, perUser int, quantities ...int64) *limitedSale {
	t.Helper()
	ls := &limitedSale{t: t, ctx: context.Background(), rdb: rdb, store: stock.New(rdb)}
	ls.sale = sale.Sale{ID: testenv.ID(t, "persale"), OpensAt: time.Now().Add(-time.Minute), PerUserLimit: perUser,
		PerSaleLimit: perSale, HoldTTL: time.Minute}
	for i, q := range quantities {
		it := sale.Item{ID: "item" + strconv.Itoa(i), Quantity: q}
		if i == len(quantities)-1 && i > 0 {
			it.Shards = 4
		}
		ls.sale.Items = append(ls.sale.Items, it)
	}
	t.Cleanup(func() {
		if err := ls.store.Reset(context.Background(), ls.sale); err != nil {
			t.Errorf("reset: %v", err)
		}
	})
	if _, err := ls.store.Preload(ls.ctx, ls.sale, nil); err != nil {
		t.Fatalf("preload: %v", err)
	}
	return ls
}

func (ls *limitedSale) request(item int, user, key string) stock.Request {
	it := ls.sale.Items[item]
	return stock.Request{SaleID: ls.sale.ID, ItemID: it.ID, UserID: user, IdemKey: key, OrderID: uuid.Must(uuid.NewV7()),
		Shards: it.ShardCount(), SaleLimit: ls.sale.PerSaleLimit}
}

func (ls *limitedSale) reserve(item int, user, key string) stock.Reservation {
	ls.t.Helper()
	rv, err := ls.store.Reserve(ls.ctx, ls.request(item, user, key))
	if err != nil {
		ls.t.Fatalf("reserve item %d for %s (%s): %v", item, user, key, err)
	}
	return rv
}

func (ls *limitedSale) release(item int, rv stock.Reservation) bool {
	ls.t.Helper()
	ok, err := ls.store.Release(ls.ctx, stock.Release{SaleID: ls.sale.ID, ItemID: ls.sale.Items[item].ID, Shard: rv.Shard,
		Shards: rv.Shards, OrderID: rv.OrderID, Status: "CANCELLED"})
	if err != nil {
		ls.t.Fatalf("release %s: %v", rv.OrderID, err)
	}
	return ok
}

func (ls *limitedSale) claims(user string) []stock.Claim {
	ls.t.Helper()
	cs, err := ls.store.Claims(ls.ctx, ls.sale.ID, user)
	if err != nil {
		ls.t.Fatal(err)
	}
	return cs
}

// TestPerSaleLimitUnderContention: every buyer fires at every item of the sale at once, twice per
// item with different keys, and the per-sale limit holds across the items (which live on different
// hash tags, on the cluster on different masters): no buyer ends with more reservations than the
// limit, every buyer who could buy holds exactly the limit (stock is plentiful), and each
// reservation holds its own claim slot.
func TestPerSaleLimitUnderContention(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		cluster bool
		perSale int
	}{
		{"one per sale", false, 1},
		{"two per sale", false, 2},
		{"cluster one per sale", true, 1},
		{"cluster two per sale", true, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			rdb := redis.UniversalClient(nil)
			if tc.cluster {
				rdb = testenv.RedisCluster(t)
			} else {
				rdb = testenv.Redis(t)
			}
			ls := newLimitedSale(t, rdb, tc.perSale, 2, 1000, 1000, 1000, 1000)
			const buyers = 150
			items := len(ls.sale.Items)
			type answer struct {
				item int
				rv   stock.Reservation
				err  error
			}
			answers := make([][]answer, buyers)
			start := make(chan struct{})
			var wg sync.WaitGroup
			var mu sync.Mutex
			for b := range buyers {
				user := "buyer-" + strconv.Itoa(b)
				for it := range items {
					for k := range 2 {
						wg.Go(func() {
							req := ls.request(it, user, fmt.Sprintf("k%d-%d", it, k))
							<-start
							rv, err := ls.store.Reserve(ls.ctx, req)
							mu.Lock()
							answers[b] = append(answers[b], answer{it, rv, err})
							mu.Unlock()
						})
					}
				}
			}
			close(start)
			wg.Wait()
			for b, as := range answers {
				user := "buyer-" + strconv.Itoa(b)
				var reserved []stock.Reservation
				slots := map[int]bool{}
				for _, a := range as {
					if a.err != nil {
						t.Fatalf("%s item %d: %v", user, a.item, a.err)
					}
					switch a.rv.Outcome {
					case outcome.Reserved:
						if !a.rv.Claimed || slots[a.rv.SaleSlot] {
							t.Errorf("%s: reservation %+v: no claim, or a claim slot another of the buyer's orders holds", user, a.rv)
						}
						slots[a.rv.SaleSlot] = true
						reserved = append(reserved, a.rv)
					case outcome.AlreadyPurchased:
					default:
						t.Errorf("%s item %d: %s, want RESERVED or ALREADY_PURCHASED", user, a.item, a.rv.Outcome)
					}
				}
				if len(reserved) != tc.perSale {
					t.Errorf("%s holds %d reservations across the sale's items, want exactly the per-sale limit %d", user, len(reserved), tc.perSale)
				}
				cs := ls.claims(user)
				if len(cs) != len(reserved) {
					t.Errorf("%s has %d claims for %d reservations: %+v", user, len(cs), len(reserved), cs)
				}
			}
		})
	}
}

// TestClaimFollowsTheAnswer: an attempt that does not reserve gives its claim back at once, a
// retry of the same attempt keeps its claim and replays its order, and a released order gives its
// claim back so the buyer may buy another item.
func TestClaimFollowsTheAnswer(t *testing.T) {
	t.Parallel()
	ls := newLimitedSale(t, testenv.Redis(t), 1, 1, 0, 5, 5)

	if rv := ls.reserve(0, "u", "a"); rv.Outcome != outcome.SoldOut || rv.SaleLimited {
		t.Fatalf("sold-out item: %+v, want SOLD_OUT", rv)
	}
	ghost := ls.request(0, "u", "g")
	ghost.ItemID = "ghost" // on sale in PostgreSQL, say, but not loaded in Redis
	if _, err := ls.store.Reserve(ls.ctx, ghost); outcome.CodeOf(err) != outcome.NotFound {
		t.Fatalf("an item Redis does not have: %v, want NOT_FOUND", err)
	}
	if cs := ls.claims("u"); len(cs) != 0 {
		t.Fatalf("a SOLD_OUT attempt kept its claim: %+v", cs)
	}
	first := ls.reserve(1, "u", "b")
	if first.Outcome != outcome.Reserved || !first.Claimed || first.SaleSlot != 0 {
		t.Fatalf("first purchase: %+v, want RESERVED in per-sale slot 0", first)
	}
	if again := ls.reserve(1, "u", "b"); again.Outcome != outcome.Reserved || !again.Replay || again.OrderID != first.OrderID {
		t.Fatalf("retry of the same attempt: %+v, want the replayed %s", again, first.OrderID)
	}
	other := ls.reserve(2, "u", "c")
	if other.Outcome != outcome.AlreadyPurchased || !other.SaleLimited {
		t.Fatalf("second item: %+v, want ALREADY_PURCHASED by the per-sale limit", other)
	}
	if n := stockOf(t, ls, 2); n != 5 {
		t.Fatalf("the refused attempt touched item2's stock: %d, want 5", n)
	}
	if cs := ls.claims("u"); len(cs) != 1 || cs[0].OrderID != first.OrderID || cs[0].ItemID != "item1" {
		t.Fatalf("claims %+v, want the one of order %s", cs, first.OrderID)
	}
	if !ls.release(1, first) {
		t.Fatal("release did not release")
	}
	if cs := ls.claims("u"); len(cs) != 0 {
		t.Fatalf("the released order kept its claim: %+v", cs)
	}
	// Its key still answers with the ended order; that answer takes no claim.
	if rv := ls.reserve(1, "u", "b"); rv.Outcome != outcome.Reserved || !rv.Replay || rv.OrderID != first.OrderID || rv.Claimed {
		t.Fatalf("the ended order's key: %+v, want its replay without a claim", rv)
	}
	if cs := ls.claims("u"); len(cs) != 0 {
		t.Fatalf("replaying the ended order took a claim: %+v", cs)
	}
	if rv := ls.reserve(2, "u", "c"); rv.Outcome != outcome.Reserved {
		t.Fatalf("after the release the buyer may buy another item: %+v", rv)
	}
}

func stockOf(t *testing.T, ls *limitedSale, item int) int64 {
	t.Helper()
	it := ls.sale.Items[item]
	var sum int64
	for k := range it.ShardCount() {
		n, err := ls.rdb.Get(ls.ctx, stock.ShardKeys(ls.sale.ID, it.ID, k, it.ShardCount()).Stock()).Int64()
		if err != nil {
			t.Fatal(err)
		}
		sum += n
	}
	return sum
}

// TestSweepClaimsGivesBackLeaks: a claim whose order is gone (the process died between the release
// and the give-back, or between the claim and the reserve) is given back by the sweep once it is
// older than the in-flight age; a claim of a live order never is, and a young one is left alone.
func TestSweepClaimsGivesBackLeaks(t *testing.T) {
	t.Parallel()
	ls := newLimitedSale(t, testenv.Redis(t), 1, 1, 5, 5)
	shards := map[string]int{"item0": 1, "item1": 4}

	live := ls.reserve(0, "live", "k")
	leaked := ls.reserve(0, "leaked", "k")
	// The release script ran, the give-back did not: what a crash between the two leaves.
	k := stock.ItemKeys(ls.sale.ID, "item0")
	if err := ls.rdb.HDel(ls.ctx, k.Orders(), leaked.OrderID.String()).Err(); err != nil {
		t.Fatal(err)
	}
	// A claim whose reserve never ran.
	if err := stock.ClaimOnly(ls.ctx, ls.store, ls.request(1, "crashed", "k")); err != nil {
		t.Fatal(err)
	}
	if n, err := ls.store.SweepClaims(ls.ctx, ls.sale.ID, shards, time.Hour); err != nil || n != 0 {
		t.Fatalf("sweep with young claims gave back %d (%v), want 0", n, err)
	}
	n, err := ls.store.SweepClaims(ls.ctx, ls.sale.ID, shards, 0)
	if err != nil || n != 2 {
		t.Fatalf("sweep gave back %d claims (%v), want the 2 leaked ones", n, err)
	}
	if cs := ls.claims("live"); len(cs) != 1 || cs[0].OrderID != live.OrderID {
		t.Fatalf("the live order's claim: %+v", cs)
	}
	for _, u := range []string{"leaked", "crashed"} {
		if cs := ls.claims(u); len(cs) != 0 {
			t.Fatalf("%s still has claims %+v", u, cs)
		}
		if rv := ls.reserve(1, u, "again"); rv.Outcome != outcome.Reserved {
			t.Fatalf("%s after the sweep: %+v, want RESERVED", u, rv)
		}
	}
}

// TestRestoreClaim: a rebuild puts a live order's claim back in its slot once, and refuses a slot
// another order holds.
func TestRestoreClaim(t *testing.T) {
	t.Parallel()
	ls := newLimitedSale(t, testenv.Redis(t), 2, 1, 5, 5)
	a := ls.reserve(0, "u", "k")
	if err := ls.store.ResetClaims(ls.ctx, ls.sale.ID); err != nil {
		t.Fatal(err)
	}
	if cs := ls.claims("u"); len(cs) != 0 {
		t.Fatalf("after ResetClaims: %+v", cs)
	}
	c := stock.Claim{UserID: "u", Slot: a.SaleSlot, ItemID: "item0", OrderID: a.OrderID}
	if ok, err := ls.store.RestoreClaim(ls.ctx, ls.sale.ID, c); !ok || err != nil {
		t.Fatalf("restore: %v %v", ok, err)
	}
	if ok, err := ls.store.RestoreClaim(ls.ctx, ls.sale.ID, c); ok || err != nil {
		t.Fatalf("restore again: %v %v, want no change", ok, err)
	}
	c.OrderID = uuid.Must(uuid.NewV7())
	if _, err := ls.store.RestoreClaim(ls.ctx, ls.sale.ID, c); err != stock.ErrSlotTaken {
		t.Fatalf("restore into a taken slot: %v, want ErrSlotTaken", err)
	}
	b := ls.reserve(1, "u", "k2")
	if b.Outcome != outcome.Reserved || b.SaleSlot == a.SaleSlot {
		t.Fatalf("next purchase: %+v, want RESERVED in the other slot than %d", b, a.SaleSlot)
	}
	if rv := ls.reserve(1, "u", "k3"); !rv.SaleLimited {
		t.Fatalf("third purchase: %+v, want the per-sale limit of 2", rv)
	}
}

// TestSaleLimitRange: a per-sale limit out of range is the caller's mistake, refused before Redis.
func TestSaleLimitRange(t *testing.T) {
	t.Parallel()
	ls := newLimitedSale(t, testenv.Redis(t), 1, 1, 5)
	r := ls.request(0, "u", "k")
	for _, bad := range []int{-1, sale.MaxPerSaleLimit + 1} {
		r.SaleLimit = bad
		if _, err := ls.store.Reserve(ls.ctx, r); outcome.CodeOf(err) != outcome.InvalidRequest {
			t.Errorf("SaleLimit %d: %v, want INVALID_REQUEST", bad, err)
		}
	}
	if n := stockOf(t, ls, 0); n != 5 {
		t.Fatalf("stock %d after refused requests, want 5", n)
	}
}

// BenchmarkReservePerSaleLimit is the per-sale limit's cost on the purchase path: the same fresh
// reservation on the real Redis without the limit and with it (a claim before the reserve), one
// call at a time and from 32×GOMAXPROCS parallel callers (where batching shares round trips).
func BenchmarkReservePerSaleLimit(b *testing.B) {
	rdb := testenv.Redis(b)
	for _, limit := range []int{0, 1} {
		for _, par := range []bool{false, true} {
			name := "none"
			if limit > 0 {
				name = "per-sale"
			}
			if par {
				name += "-parallel"
			}
			b.Run(name, func(b *testing.B) {
				st := stock.New(rdb)
				sl := sale.Sale{ID: testenv.ID(b, "bench"), OpensAt: time.Now().Add(-time.Minute), PerUserLimit: 1,
					PerSaleLimit: limit, HoldTTL: time.Hour, Items: []sale.Item{{ID: "hot", Quantity: 1 << 40}}}
				if _, err := st.Preload(context.Background(), sl, nil); err != nil {
					b.Fatal(err)
				}
				b.Cleanup(func() { _ = st.Reset(context.Background(), sl) })
				var n atomic.Int64
				reserve := func() {
					u := strconv.FormatInt(n.Add(1), 10)
					rv, err := st.Reserve(context.Background(), stock.Request{SaleID: sl.ID, ItemID: "hot", UserID: u, IdemKey: u,
						OrderID: uuid.Must(uuid.NewV7()), Shards: 1, SaleLimit: limit})
					if err != nil || rv.Outcome != outcome.Reserved {
						b.Errorf("reserve: %+v %v", rv, err)
					}
				}
				b.ResetTimer()
				if !par {
					for b.Loop() {
						reserve()
					}
					return
				}
				b.SetParallelism(32)
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() {
						reserve()
					}
				})
			})
		}
	}
}
