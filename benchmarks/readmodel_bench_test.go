package benchmarks

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/fsctl/fsctl/internal/checkout/events"
	"github.com/fsctl/fsctl/internal/checkout/orders"
	"github.com/fsctl/fsctl/internal/checkout/provision"
	"github.com/fsctl/fsctl/internal/checkout/readmodel"
	"github.com/fsctl/fsctl/internal/checkout/stock"
	"github.com/fsctl/fsctl/internal/contract/sale"
	"github.com/fsctl/fsctl/internal/harness/testenv"
	"github.com/fsctl/fsctl/internal/harness/testenv/eventually"
	"github.com/fsctl/fsctl/internal/platform/kafkaconn"
	"github.com/fsctl/fsctl/server"
)

// readCounter counts what a go-redis client sends: round trips (a pipeline is one) and commands.
type readCounter struct{ trips, cmds atomic.Int64 }

func (c *readCounter) DialHook(next redis.DialHook) redis.DialHook { return next }

func (c *readCounter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		c.trips.Add(1)
		c.cmds.Add(1)
		return next(ctx, cmd)
	}
}

func (c *readCounter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		c.trips.Add(1)
		c.cmds.Add(int64(len(cmds)))
		return next(ctx, cmds)
	}
}

// countedRedis is a client of the stack's Redis whose traffic c counts.
func countedRedis(b *testing.B, c *readCounter) *redis.Client {
	opts := testenv.Redis(b).Options()
	rdb := redis.NewClient(opts)
	rdb.AddHook(c)
	b.Cleanup(func() { _ = rdb.Close() })
	return rdb
}

// BenchmarkSalePageRedisReads runs K in-process API instances (1, 4, 16), each serving 200 sale
// page requests a second, while the item's stock changes 100 times a second, and counts the round
// trips the stock Redis gets per second, with --read-model poll (each instance re-reads the
// counters every ReadModelTTL, 500 ms) and events (one snapshot publisher — the consumer and the
// jobs — reads the changed items every flush and every instance tails the stock topic), in the
// same run. Run it with `go test -run '^$' -bench SalePageRedisReads -benchtime 1x ./benchmarks/`.
func BenchmarkSalePageRedisReads(b *testing.B) {
	ctx := context.Background()
	pgURL := testenv.Postgres(b)
	if _, err := orders.Migrate(ctx, pgURL); err != nil {
		b.Fatal(err)
	}
	db, err := orders.Open(ctx, pgURL)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(db.Close)
	sl := sale.Sale{ID: testenv.ID(b, "sale"), OpensAt: time.Now().Add(-time.Minute), PerUserLimit: 1, HoldTTL: time.Minute,
		Items: []sale.Item{{ID: hotItem, Quantity: 1_000_000, PriceCents: 100}}}
	sl.Normalize()
	plain := stock.New(testenv.Redis(b))
	if _, err := provision.Sale(ctx, db, plain, sl, provision.Options{}); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = plain.Reset(context.Background(), sl) })
	brokers, topic := testenv.KafkaBrokers(b), testenv.KafkaTopic(b, 1)

	var table strings.Builder
	fmt.Fprintf(&table, "\n| instances | read model | API round trips/s | publisher round trips/s | stock Redis round trips/s | per instance | page requests/s |\n|---|---|---|---|---|---|---|\n")
	for _, k := range []int{1, 4, 16} {
		for _, mode := range []string{server.ReadModelPoll, server.ReadModelEvents} {
			b.Run(fmt.Sprintf("instances=%d/%s", k, mode), func(b *testing.B) {
				api, pub, pages, secs := pageLoad(b, db, plain, sl, k, mode, brokers, topic)
				total := (api + pub) / secs
				b.ReportMetric(total, "redis-trips/s")
				b.ReportMetric(total/float64(k), "redis-trips/s/instance")
				fmt.Fprintf(&table, "| %d | %s | %.1f | %.1f | %.1f | %.2f | %.0f |\n", k, mode, api/secs, pub/secs, total, total/float64(k), pages/secs)
			})
		}
	}
	b.Log(table.String())
}

// pageLoad runs one case for a 3 s window and returns the round trips of the API instances and of
// the snapshot publisher, the page requests served and the window in seconds.
func pageLoad(b *testing.B, db *orders.Store, plain *stock.Store, sl sale.Sale, k int, mode string, brokers []string, topic string) (api, pub, pages, secs float64) {
	const window = 3 * time.Second
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	defer func() { cancel(); wg.Wait() }()
	var apiReads, pubReads readCounter
	apiRdb := countedRedis(b, &apiReads)
	ref := stock.ItemRef{SaleID: sl.ID, ItemID: hotItem}

	var snapshots *readmodel.Publisher
	if mode == server.ReadModelEvents {
		sink, err := events.NewPublisher(kafkaconn.Conn{Brokers: brokers}, topic)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = sink.Close() })
		snapshots = readmodel.NewPublisher(countedRedis(b, &pubReads), sink, 0, 0, log)
		wg.Go(func() { _ = snapshots.Run(ctx) })
		snapshots.Changed(ref)
	}
	handlers := make([]http.Handler, k)
	var views []*readmodel.View
	for i := range handlers {
		cfg := server.DefaultConfig()
		s := server.New(cfg, server.Deps{Stock: stock.New(apiRdb), Orders: db, Log: log})
		if mode == server.ReadModelEvents {
			v, err := readmodel.NewView(readmodel.ViewConfig{Kafka: kafkaconn.Conn{Brokers: brokers}, Topic: topic}, apiRdb, log)
			if err != nil {
				b.Fatal(err)
			}
			wg.Go(func() { _ = v.Run(ctx) })
			s.SetStockView(v)
			views = append(views, v)
		}
		handlers[i] = s.Handler()
	}
	for _, v := range views {
		eventually.True(b, 30*time.Second, v.Live, "view not live")
	}

	// Stock changes 100 times a second (a busy sale: reservations recorded, holds released),
	// through a client nobody counts; in events mode each change is reported as the consumer would.
	wg.Go(func() {
		t := time.NewTicker(10 * time.Millisecond)
		defer t.Stop()
		key := stock.ShardKeys(sl.ID, hotItem, 0, 0).Stock()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			_ = plain.Client().Decr(ctx, key).Err()
			if snapshots != nil {
				snapshots.Changed(ref)
			}
		}
	})
	var served atomic.Int64
	path := "/api/v1/sales/" + sl.ID
	b.ResetTimer()
	apiReads.trips.Store(0)
	pubReads.trips.Store(0)
	start := time.Now()
	wctx, wcancel := context.WithTimeout(ctx, window)
	defer wcancel()
	var pagers sync.WaitGroup
	for _, h := range handlers {
		pagers.Go(func() {
			t := time.NewTicker(5 * time.Millisecond) // 200 page requests a second per instance
			defer t.Stop()
			for {
				select {
				case <-wctx.Done():
					return
				case <-t.C:
				}
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
				if rec.Code != http.StatusOK {
					b.Errorf("GET sale: %d %s", rec.Code, rec.Body)
					return
				}
				if got := rec.Header().Get("X-Stock-Source"); got != mode {
					b.Errorf("stock source %q, want %q", got, mode)
					return
				}
				served.Add(1)
			}
		})
	}
	pagers.Wait()
	secs = time.Since(start).Seconds()
	b.StopTimer()
	return float64(apiReads.trips.Load()), float64(pubReads.trips.Load()), float64(served.Load()), secs
}
