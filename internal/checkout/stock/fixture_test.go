package stock_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"

	"github.com/fsctl/fsctl/internal/checkout/stock"
	"github.com/fsctl/fsctl/internal/contract/outcome"
	"github.com/fsctl/fsctl/internal/contract/sale"
	"github.com/fsctl/fsctl/internal/harness/testenv"
)

// fixture is one preloaded single-item sale on the shared Redis, under ids no other test uses.
type fixture struct {
	t     *testing.T
	ctx   context.Context
	rdb   redis.UniversalClient
	store *stock.Store
	sale  sale.Sale
	item  string
	keys  stock.Keys
}

// newFixture preloads a sale (open since a minute ago) with one item of quantity units and the
// given per-user limit; edit may change the sale before the preload. Its keys are reset at the end.
func newFixture(t *testing.T, quantity int64, limit int, edit ...func(*sale.Sale)) *fixture {
	t.Helper()
	return newFixtureOn(t, testenv.Redis(t), quantity, limit, edit...)
}

// newClusterFixture is newFixture on the local Redis Cluster.
func newClusterFixture(t *testing.T, quantity int64, limit int, edit ...func(*sale.Sale)) *fixture {
	t.Helper()
	return newFixtureOn(t, testenv.RedisCluster(t), quantity, limit, edit...)
}

func newFixtureOn(t *testing.T, rdb redis.UniversalClient, quantity int64, limit int, edit ...func(*sale.Sale)) *fixture {
	t.Helper()
	f := &fixture{t: t, ctx: context.Background(), rdb: rdb, store: stock.New(rdb), item: "item"}
	f.sale = sale.Sale{
		ID: testenv.ID(t, "stock"), OpensAt: time.Now().Add(-time.Minute), PerUserLimit: limit,
		HoldTTL: time.Minute, Items: []sale.Item{{ID: f.item, Quantity: quantity}},
	}
	for _, e := range edit {
		e(&f.sale)
	}
	f.keys = stock.ItemKeys(f.sale.ID, f.item)
	t.Cleanup(func() {
		if err := f.store.Reset(context.Background(), f.sale); err != nil {
			t.Errorf("reset: %v", err)
		}
	})
	if _, err := f.store.Preload(f.ctx, f.sale, nil); err != nil {
		t.Fatalf("preload: %v", err)
	}
	return f
}

func (f *fixture) request(user, key string) stock.Request {
	return stock.Request{SaleID: f.sale.ID, ItemID: f.item, UserID: user, IdemKey: key, OrderID: uuid.Must(uuid.NewV7()),
		Shards: f.sale.Items[0].ShardCount()}
}

// reserve runs one reserve and fails the test on a Redis error.
func (f *fixture) reserve(user, key string) stock.Reservation {
	f.t.Helper()
	res, err := f.store.Reserve(f.ctx, f.request(user, key))
	if err != nil {
		f.t.Fatalf("reserve(%q, %q): %v", user, key, err)
	}
	return res
}

// mustReserve reserves and fails the test unless the answer is a fresh RESERVED.
func (f *fixture) mustReserve(user, key string) stock.Reservation {
	f.t.Helper()
	res := f.reserve(user, key)
	if res.Outcome != outcome.Reserved || res.Replay {
		f.t.Fatalf("reserve(%q, %q) = %+v, want a fresh RESERVED", user, key, res)
	}
	return res
}

func (f *fixture) release(orderID uuid.UUID) bool {
	f.t.Helper()
	ok, err := f.store.Release(f.ctx, stock.Release{SaleID: f.sale.ID, ItemID: f.item, OrderID: orderID, Status: "CANCELLED"})
	if err != nil {
		f.t.Fatalf("release %s: %v", orderID, err)
	}
	return ok
}

// counts reads stock, holds and orders in one MULTI, so it sees a state between two scripts even
// while other goroutines run them.
func (f *fixture) counts() (stockN, holds, orders int64, err error) {
	pipe := f.rdb.TxPipeline()
	s := pipe.Get(f.ctx, f.keys.Stock())
	h := pipe.ZCard(f.ctx, f.keys.Holds())
	o := pipe.HLen(f.ctx, f.keys.Orders())
	if _, err := pipe.Exec(f.ctx); err != nil {
		return 0, 0, 0, err
	}
	stockN, err = s.Int64()
	return stockN, h.Val(), o.Val(), err
}

// checkInvariant asserts no unit was lost or invented: over every shard, stock + units in transit +
// holds == quantity, no counter below zero, and every hold has its order record.
func (f *fixture) checkInvariant(step string) {
	f.t.Helper()
	if err := f.invariant(); err != nil {
		f.t.Fatalf("after %s: %v", step, err)
	}
}

// atomic reports whether the fixture's Redis can read every shard in one MULTI: one node can; on a
// cluster the shards live on different masters, and only a quiet sale can be read whole.
func (f *fixture) atomic() bool {
	_, one := f.rdb.(*redis.Client)
	return one
}

// invariant reads every shard's counters, ledger and applied set in one MULTI on one Redis node, so
// it sees a state between two scripts even while other goroutines run them and borrow (on a
// cluster, in one pipeline: see atomic).
func (f *fixture) invariant() error {
	type shard struct {
		stock         *redis.StringCmd
		holds, orders *redis.IntCmd
		ledger        *redis.MapStringStringCmd
		appliedInto   *redis.StringSliceCmd
	}
	pipe := f.rdb.Pipeline()
	if f.atomic() {
		pipe = f.rdb.TxPipeline()
	}
	cs := make([]shard, f.shards())
	for k := range cs {
		keys := f.shardKeys(k)
		cs[k] = shard{pipe.Get(f.ctx, keys.Stock()), pipe.ZCard(f.ctx, keys.Holds()), pipe.HLen(f.ctx, keys.Orders()),
			pipe.HGetAll(f.ctx, keys.Ledger()), pipe.SMembers(f.ctx, keys.Applied())}
	}
	if _, err := pipe.Exec(f.ctx); err != nil {
		return err
	}
	applied := map[string]bool{} // "to/transferId"
	for k, c := range cs {
		for _, id := range c.appliedInto.Val() {
			applied[strconv.Itoa(k)+"/"+id] = true
		}
	}
	var total int64
	for k, c := range cs {
		s, err := c.stock.Int64()
		if err != nil {
			return fmt.Errorf("shard %d stock: %w", k, err)
		}
		if s < 0 || c.holds.Val() != c.orders.Val() {
			return fmt.Errorf("shard %d: stock %d, holds %d, orders %d", k, s, c.holds.Val(), c.orders.Val())
		}
		total += s + c.holds.Val()
		for id, v := range c.ledger.Val() {
			to, units, _ := strings.Cut(v, "\n")
			units, _, _ = strings.Cut(units, "\n")
			if n, err := strconv.ParseInt(units, 10, 64); err == nil && !applied[to+"/"+id] {
				total += n
			}
		}
	}
	if q := f.sale.Items[0].Quantity; total != q {
		return fmt.Errorf("stock + in transit + holds = %d over %d shards, quantity %d", total, len(cs), q)
	}
	return nil
}

func (f *fixture) stock() int64 {
	f.t.Helper()
	s, _, _, err := f.counts()
	if err != nil {
		f.t.Fatalf("read stock: %v", err)
	}
	return s
}

func (f *fixture) buyerMask(user string) int64 {
	f.t.Helper()
	n, err := f.rdb.HGet(f.ctx, f.keys.Buyers(), user).Int64()
	if errors.Is(err, redis.Nil) {
		return 0
	}
	if err != nil {
		f.t.Fatalf("buyer mask of %q: %v", user, err)
	}
	return n
}
