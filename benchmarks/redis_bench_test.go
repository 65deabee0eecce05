package benchmarks

import (
	"context"
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"

	"github.com/fsctl/fsctl/internal/checkout/stock"
	"github.com/fsctl/fsctl/internal/contract/outcome"
	"github.com/fsctl/fsctl/internal/contract/sale"
	"github.com/fsctl/fsctl/internal/harness/stack"
	"github.com/fsctl/fsctl/internal/harness/testenv"
	"github.com/fsctl/fsctl/internal/platform/redisconn"
)

// neverSellsOut is stock no benchmark run can exhaust, so every reserve really takes a unit.
const neverSellsOut = 1 << 40

// redisHotItem preloads one open, unsharded item with the given stock and a per-user limit of 1.
func redisHotItem(b *testing.B, quantity int64, opts ...stock.Option) (*stock.Store, sale.Sale) {
	b.Helper()
	return redisItem(b, sale.Item{ID: hotItem, Quantity: quantity}, opts...)
}

// contenderClient is a client of the local Redis with a warm connection for every contender, so
// the benchmarks measure round trips, not dials; it is closed when the benchmark ends.
func contenderClient(b *testing.B) *redis.Client {
	b.Helper()
	testenv.Redis(b) // skips under -short, fails fast when the stack is down
	opts, err := redis.ParseURL(stack.EndpointsFromEnv().RedisURL)
	if err != nil {
		b.Fatalf("redis url: %v", err)
	}

	opts.PoolSize = contenders + 4
	opts.MinIdleConns = contenders
	rdb := redis.NewClient(opts)
	b.Cleanup(func() { _ = rdb.Close() })
	return rdb
}

// redisItem preloads one open item with a per-user limit of 1 under a fresh sale id (the Redis
// server is shared), on a client with a connection for every contender, and resets the sale's keys
// when the benchmark ends.
func redisItem(b *testing.B, item sale.Item, opts ...stock.Option) (*stock.Store, sale.Sale) {
	b.Helper()
	return redisItemOn(b, contenderClient(b), item, opts...)
}

// contenderClusterClient is contenderClient on the local Redis Cluster: a warm connection for
// every contender to every master.
func contenderClusterClient(b *testing.B) redis.UniversalClient {
	b.Helper()
	testenv.RedisCluster(b)
	rdb, err := redisconn.Open(stack.EndpointsFromEnv().RedisClusterURL, redisconn.Tune{PoolSize: contenders + 4, MinIdleConns: contenders})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = rdb.Close() })
	return rdb
}

// redisItemOn is redisItem on the given client.
func redisItemOn(b *testing.B, rdb redis.UniversalClient, item sale.Item, opts ...stock.Option) (*stock.Store, sale.Sale) {
	b.Helper()
	ctx := context.Background()
	s := stock.New(rdb, opts...)
	if err := s.LoadScripts(ctx); err != nil {
		b.Fatal(err)
	}
	sl := sale.Sale{
		ID: testenv.ID(b, "bench"), OpensAt: time.Now().Add(-time.Minute), PerUserLimit: 1, HoldTTL: time.Minute,
		Items: []sale.Item{item},
	}
	b.Cleanup(func() {
		if err := s.Reset(context.Background(), sl); err != nil {
			b.Errorf("reset: %v", err)
		}
	})
	if _, err := s.Preload(ctx, sl, nil); err != nil {
		b.Fatal(err)
	}
	return s, sl
}

// runRedisContended runs the reserve script with the same parallelism as the PostgreSQL benchmarks'
// runContended: b.SetParallelism from contenders, ~64 goroutines whatever GOMAXPROCS is, so both
// sides face the same contention. Each op is for a user no earlier op used, so no answer comes from
// an idempotency record or the per-user limit. It fails the benchmark on any answer but want, then
// returns the item's counters.
func runRedisContended(b *testing.B, s *stock.Store, sl sale.Sale, want outcome.Code) stock.ItemState {
	return runRedisContendedThen(b, s, sl, want, nil)
}

// runRedisContendedThen is runRedisContended with then, when set, run after each reserve as part of
// the op.
func runRedisContendedThen(b *testing.B, s *stock.Store, sl sale.Sale, want outcome.Code, then func(stock.Reservation) error) stock.ItemState {
	b.Helper()
	ctx := context.Background()
	var users atomic.Int64
	b.SetParallelism(max(1, contenders/runtime.GOMAXPROCS(0)))
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			r, err := s.Reserve(ctx, stock.Request{
				SaleID: sl.ID, ItemID: hotItem, UserID: "u" + strconv.FormatInt(users.Add(1), 10),
				IdemKey: "k", OrderID: uuid.Must(uuid.NewV7()),
			})
			if err != nil || r.Outcome != want || r.Replay {
				b.Errorf("reserve = %+v, %v; want a fresh %s", r, err, want)
				return
			}
			if then != nil {
				if err := then(r); err != nil {
					b.Error(err)
					return
				}
			}
		}
	})
	b.StopTimer()
	st, err := s.Snapshot(ctx, sl.ID, sl.Items)
	if err != nil {
		b.Fatal(err)
	}
	return st[0]
}

// BenchmarkRedisReserve is the Lua reserve on one hot item that never sells out: every op checks
// the limit, takes a unit and writes the hold, order record and idempotency record.
func BenchmarkRedisReserve(b *testing.B) {
	s, sl := redisHotItem(b, neverSellsOut)
	st := runRedisContended(b, s, sl, outcome.Reserved)
	if st.Stock != neverSellsOut-int64(b.N) || st.Holds != int64(b.N) {
		b.Fatalf("after %d reserves: stock %d, holds %d", b.N, st.Stock, st.Holds)
	}
}

// BenchmarkRedisReserveSoldOut is the path most buyers of a flash sale take (490k of 500k): the
// item has no stock left, the script answers SOLD_OUT and writes only the idempotency record.
func BenchmarkRedisReserveSoldOut(b *testing.B) {
	s, sl := redisHotItem(b, 0)
	st := runRedisContended(b, s, sl, outcome.SoldOut)
	if st.Stock != 0 || st.Holds != 0 {
		b.Fatalf("sold-out item after %d attempts: stock %d, holds %d", b.N, st.Stock, st.Holds)
	}
}

// BenchmarkRedisReserveBatching is BenchmarkRedisReserve with the store's round-trip batching
// (stock.Batch, the server's default) and without it, in one run: 64 contenders, each reserve its
// own script call; batched, the calls that arrive while a pipeline is in flight share the next.
// Batching saves round trips and system calls; batched, the reserves of the item that share a
// pipeline are also one call of the script (BenchmarkRedisReserveMerged measures that part alone).
func BenchmarkRedisReserveBatching(b *testing.B) {
	for _, tc := range []struct {
		name string
		opts []stock.Option
	}{
		{"unbatched", []stock.Option{stock.Batch(0, 0)}},
		{"batched", nil},
	} {
		b.Run(tc.name, func(b *testing.B) {
			s, sl := redisHotItem(b, neverSellsOut, tc.opts...)
			st := runRedisContended(b, s, sl, outcome.Reserved)
			if st.Stock != neverSellsOut-int64(b.N) || st.Holds != int64(b.N) {
				b.Fatalf("after %d reserves: stock %d, holds %d", b.N, st.Stock, st.Holds)
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "reserves/s")
		})
	}
}

// BenchmarkRedisReserveMerged is the batched reserve with and without the merge of one shard's
// reserves into one script call (stock.MergeReserves), in one run, on an item that never sells out
// and on a sold-out one, 64 contenders. Besides the pace it reports Redis's own CPU an op
// (redis-us/op, from INFO's used_cpu_user and used_cpu_sys; Redis is the local stack's, so any other
// client's work in the meantime counts too).
func BenchmarkRedisReserveMerged(b *testing.B) {
	for _, item := range []struct {
		name     string
		quantity int64
		want     outcome.Code
	}{{"reserve", neverSellsOut, outcome.Reserved}, {"sold-out", 0, outcome.SoldOut}} {
		for _, merged := range []bool{false, true} {
			name := item.name + "/one-call-an-attempt"
			if merged {
				name = item.name + "/one-call-a-shard"
			}
			b.Run(name, func(b *testing.B) {
				s, sl := redisHotItem(b, item.quantity, stock.MergeReserves(merged))
				before := redisCPU(b, s.Client())
				st := runRedisContended(b, s, sl, item.want)
				spent := redisCPU(b, s.Client()) - before
				if held := neverSellsOut - st.Stock; item.want == outcome.Reserved && (held != int64(b.N) || st.Holds != int64(b.N)) {
					b.Fatalf("after %d reserves: %d units taken, %d holds", b.N, held, st.Holds)
				}
				b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "reserves/s")
				b.ReportMetric(spent.Seconds()*1e6/float64(b.N), "redis-us/op")
			})
		}
	}
}

// redisCPU is the CPU time the Redis server has spent so far, user and system (INFO cpu).
func redisCPU(b *testing.B, rdb redis.UniversalClient) time.Duration {
	b.Helper()
	info, err := rdb.Info(context.Background(), "cpu").Result()
	if err != nil {
		b.Fatalf("INFO cpu: %v", err)
	}
	var secs float64
	for line := range strings.SplitSeq(info, "\r\n") {
		name, v, _ := strings.Cut(line, ":")
		if name == "used_cpu_user" || name == "used_cpu_sys" {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				b.Fatalf("INFO cpu: %s: %v", line, err)
			}
			secs += f
		}
	}
	return time.Duration(secs * float64(time.Second))
}

// BenchmarkRedisReserveConfirm is the Redis side of a fresh purchase before and after the hand-off's
// confirm (lua/confirm.lua: the order still live on its epoch, marked handed off), in one run: the
// reserve alone, and the reserve followed by its confirm, both batched as the server sends them.
// The confirm is a second script call per purchase, sharing pipelines with the other purchases'.
func BenchmarkRedisReserveConfirm(b *testing.B) {
	for _, confirm := range []bool{false, true} {
		name := "reserve"
		if confirm {
			name = "reserve+confirm"
		}
		b.Run(name, func(b *testing.B) {
			s, sl := redisHotItem(b, neverSellsOut)
			var then func(stock.Reservation) error
			if confirm {
				then = func(r stock.Reservation) error {
					ok, err := s.Confirm(context.Background(), sl.ID, hotItem, r.Shard, r.Shards, r.OrderID, r.Epoch)
					if err == nil && !ok {
						err = fmt.Errorf("confirm of live order %s refused", r.OrderID)
					}
					return err
				}
			}
			st := runRedisContendedThen(b, s, sl, outcome.Reserved, then)
			if st.Holds != int64(b.N) {
				b.Fatalf("after %d purchases: %d holds", b.N, st.Holds)
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "purchases/s")
		})
	}
}
