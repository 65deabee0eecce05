package reservation_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/fsctl/fsctl/internal/checkout/reservation"
	"github.com/fsctl/fsctl/internal/checkout/stock"
	"github.com/fsctl/fsctl/internal/contract/outcome"
	"github.com/fsctl/fsctl/internal/contract/sale"
	"github.com/fsctl/fsctl/internal/harness/netfault"
	"github.com/fsctl/fsctl/internal/harness/testenv"
	"github.com/fsctl/fsctl/internal/harness/testenv/eventually"
)

// preload opens a sale of one item of quantity units on the real Redis, reset when tb ends.
func preload(tb testing.TB, st *stock.Store, quantity int64, limit int) sale.Sale {
	tb.Helper()
	sl := sale.Sale{ID: testenv.ID(tb, "rsv"), OpensAt: time.Now().Add(-time.Minute), PerUserLimit: limit,
		HoldTTL: time.Hour, Items: []sale.Item{{ID: "hot", Quantity: quantity}}}
	sl.Normalize()
	tb.Cleanup(func() { _ = st.Reset(context.Background(), sl) })
	if _, err := st.Preload(context.Background(), sl, nil); err != nil {
		tb.Fatalf("preload: %v", err)
	}
	return sl
}

// TestSameAnswersAsInProcess: through the service, the real store gives the answers it gives
// in-process: a reservation, its replay, ALREADY_PURCHASED, SOLD_OUT, the lookups, the release.
func TestSameAnswersAsInProcess(t *testing.T) {
	st := stock.New(testenv.Redis(t))
	c, _ := serve(t, st)
	sl := preload(t, st, 1, 1)
	ctx := context.Background()
	req := func(user, key string) stock.Request {
		return stock.Request{SaleID: sl.ID, ItemID: "hot", UserID: user, IdemKey: key, OrderID: uuid.Must(uuid.NewV7()), Shards: 1}
	}
	first, err := c.Reserve(ctx, req("alice", "k1"))
	if err != nil || first.Outcome != outcome.Reserved || first.Replay || first.ExpiresAt.IsZero() || first.Replicas != -1 {
		t.Fatalf("first reserve: %+v %v", first, err)
	}
	again, err := c.Reserve(ctx, req("alice", "k1"))
	if err != nil || !again.Replay || again.OrderID != first.OrderID || !again.ExpiresAt.Equal(first.ExpiresAt) {
		t.Fatalf("replay: %+v %v, want the first answer %+v", again, err, first)
	}
	if rv, err := c.Reserve(ctx, req("alice", "k2")); err != nil || rv.Outcome != outcome.AlreadyPurchased {
		t.Fatalf("second key: %+v %v", rv, err)
	}
	if rv, err := c.Reserve(ctx, req("bob", "k1")); err != nil || rv.Outcome != outcome.SoldOut {
		t.Fatalf("bob: %+v %v", rv, err)
	}
	if n, err := c.Remaining(ctx, []stock.ItemRef{{SaleID: sl.ID, ItemID: "hot", Shards: 1}}); err != nil || len(n) != 1 || n[0] != 0 {
		t.Fatalf("remaining %v %v", n, err)
	}
	if os, ok, err := c.LookupOrder(ctx, first.OrderID); err != nil || !ok || os.Status != stock.StatusPending || os.UserID != "alice" {
		t.Fatalf("lookup %+v %v %v", os, ok, err)
	}
	if ok, err := c.Confirm(ctx, sl.ID, "hot", first.Shard, first.Shards, first.OrderID, first.Epoch); err != nil || !ok {
		t.Fatalf("confirm %v %v", ok, err)
	}
	if states, err := c.Snapshot(ctx, sl.ID, sl.Items); err != nil || len(states) != 1 || states[0].Holds != 1 || len(states[0].Shards) != 1 {
		t.Fatalf("snapshot %+v %v", states, err)
	}
	rel := stock.Release{SaleID: sl.ID, ItemID: "hot", Shard: first.Shard, Shards: first.Shards, OrderID: first.OrderID, Status: "CANCELLED"}
	if ok, err := c.Release(ctx, rel); err != nil || !ok {
		t.Fatalf("release %v %v", ok, err)
	}
	if ok, err := c.Release(ctx, rel); err != nil || ok {
		t.Fatalf("second release %v %v, want a no-op", ok, err)
	}
	if err := c.SetPaused(ctx, sl, true); err != nil {
		t.Fatal(err)
	}
	if rv, err := c.Reserve(ctx, req("carol", "k1")); err != nil || rv.Outcome != outcome.Paused {
		t.Fatalf("paused: %+v %v", rv, err)
	}
	if _, err := c.Reserve(ctx, stock.Request{SaleID: sl.ID, ItemID: "nope", UserID: "u", IdemKey: "k", OrderID: uuid.Must(uuid.NewV7())}); outcome.CodeOf(err) != outcome.NotFound {
		t.Fatalf("item not preloaded: %v, want NOT_FOUND", err)
	}
}

// TestHealthFollowsRedis: SERVING once the scripts are loaded, NOT_SERVING when Redis goes away.
func TestHealthFollowsRedis(t *testing.T) {
	testenv.Redis(t)
	tp, err := netfault.Local()
	if err != nil {
		t.Fatal(err)
	}
	defer tp.Close()
	proxy, err := tp.Create("redis", "127.0.0.1:0", redisAddr(t))
	if err != nil {
		t.Fatal(err)
	}
	rdb := redis.NewClient(&redis.Options{Addr: proxy.Listen, MaxRetries: -1, DialTimeout: 200 * time.Millisecond})
	defer rdb.Close()
	st := stock.New(rdb)
	c, hs := serve(t, st)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go reservation.WatchHealth(ctx, hs, st, 50*time.Millisecond, slog.New(slog.NewTextHandler(io.Discard, nil)))
	waitHealth(t, c, hs, healthpb.HealthCheckResponse_SERVING)
	if err := c.Check(ctx); err != nil {
		t.Fatalf("check: %v", err)
	}
	if err := proxy.Disable(); err != nil { // Redis gone: the listener and every connection closed
		t.Fatal(err)
	}
	waitHealth(t, c, hs, healthpb.HealthCheckResponse_NOT_SERVING)
	if err := c.Check(ctx); err == nil {
		t.Fatal("check passed with Redis gone")
	}
}

func redisAddr(t *testing.T) string {
	opts := testenv.Redis(t).Options()
	return opts.Addr
}

func waitHealth(t *testing.T, c *reservation.Client, _ *health.Server, want healthpb.HealthCheckResponse_ServingStatus) {
	t.Helper()
	eventually.OK(t, 5*time.Second, func() error {
		err := c.Check(context.Background())
		got := healthpb.HealthCheckResponse_SERVING
		if err != nil {
			got = healthpb.HealthCheckResponse_NOT_SERVING
		}
		if got != want {
			return fmt.Errorf("health %s, want %s (%v)", got, want, err)
		}
		return nil
	})
}

// BenchmarkReserve is the cost of the split deployment's extra hop: the same fresh reservation on
// the real Redis, in-process and through the service on a loopback port, one call at a time and
// from 32×GOMAXPROCS parallel callers (where the store's batching shares round trips and gRPC
// multiplexes one HTTP/2 connection).
func BenchmarkReserve(b *testing.B) {
	st := stock.New(testenv.Redis(b))
	c, _ := serve(b, st)
	for _, mode := range []struct {
		name string
		r    interface {
			Reserve(context.Context, stock.Request) (stock.Reservation, error)
		}
	}{{"inprocess", st}, {"grpc", c}} {
		for _, par := range []bool{false, true} {
			name := mode.name
			if par {
				name += "-parallel"
			}
			b.Run(name, func(b *testing.B) {
				sl := preload(b, st, 1<<40, 1)
				var n atomic.Int64
				reserve := func() {
					u := strconv.FormatInt(n.Add(1), 10)
					rv, err := mode.r.Reserve(context.Background(), stock.Request{SaleID: sl.ID, ItemID: "hot", UserID: u, IdemKey: u,
						OrderID: uuid.Must(uuid.NewV7()), Shards: 1})
					if err != nil || rv.Outcome != outcome.Reserved {
						b.Errorf("reserve: %+v %v", rv, err) // not Fatal: RunParallel's goroutines
					}
				}
				b.ResetTimer()
				if !par {
					for b.Loop() {
						reserve()
					}
					return
				}
				b.SetParallelism(32) // 64 callers on 2 cores: a busy API instance
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() {
						reserve()
					}
				})
			})
		}
	}
}
