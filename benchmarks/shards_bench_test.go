package benchmarks

import (
	"context"
	"fmt"
	"runtime"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"

	"github.com/fsctl/fsctl/internal/checkout/stock"
	"github.com/fsctl/fsctl/internal/contract/outcome"
	"github.com/fsctl/fsctl/internal/contract/sale"
)

// BenchmarkReserveShards is the reserve of a hot item split over shards, with the same ~64
// contenders as the other Redis benchmarks and a fresh user per op. On one Redis the shards only
// spread keys (and, on a Redis Cluster, slots), so the plain variants show what sharding costs on
// the happy path. The borrow variant keeps every unit in shard 0 and only sends buyers homed
// elsewhere: each op finds its home empty, moves a unit in through the transfer ledger and
// reserves it (4 round trips or more instead of 1).
func BenchmarkReserveShards(b *testing.B) {
	for _, shards := range []int{1, 4, 16} {
		b.Run(fmt.Sprintf("shards=%d", shards), func(b *testing.B) {
			s, sl := redisItem(b, sale.Item{ID: hotItem, Quantity: neverSellsOut, Shards: shards})
			borrowed := runSharded(b, s, sl, -1)
			st := shardedState(b, s, sl)
			if st.Stock != neverSellsOut-int64(b.N) || st.Holds != int64(b.N) || borrowed != 0 {
				b.Fatalf("after %d reserves: stock %d, holds %d, %d borrowed", b.N, st.Stock, st.Holds, borrowed)
			}
		})
	}
	b.Run("shards=4/borrow", func(b *testing.B) {
		const shards = 4
		s, sl := redisItem(b, sale.Item{ID: hotItem, Quantity: neverSellsOut, Shards: shards})
		// Move every unit into shard 0, as transfers would have.
		ctx, rdb := context.Background(), s.Client()
		for k := 1; k < shards; k++ {
			n := int64(neverSellsOut / shards)
			if err := rdb.DecrBy(ctx, stock.ShardKeys(sl.ID, hotItem, k, shards).Stock(), n).Err(); err != nil {
				b.Fatal(err)
			}
			if err := rdb.IncrBy(ctx, stock.ShardKeys(sl.ID, hotItem, 0, shards).Stock(), n).Err(); err != nil {
				b.Fatal(err)
			}
		}
		borrowed := runSharded(b, s, sl, 0)
		st := shardedState(b, s, sl)
		if st.Stock != neverSellsOut-int64(b.N) || st.Holds != int64(b.N) || borrowed != int64(b.N) {
			b.Fatalf("after %d reserves: stock %d, holds %d, %d borrowed", b.N, st.Stock, st.Holds, borrowed)
		}
	})
}

// BenchmarkReserveHotItemCluster is one hot item split over 8 shards, reserved by the same ~64
// contenders with a fresh user per op, on one Redis node and on the local 3-master Redis Cluster
// in the same run: what the cluster changes for the hottest item of a sale. On one small machine
// the client and the three servers share the cores, so the ratio says what the cluster costs
// there; on a machine with a core per master it says what it buys.
func BenchmarkReserveHotItemCluster(b *testing.B) {
	item := sale.Item{ID: hotItem, Quantity: neverSellsOut, Shards: 8}
	for _, tc := range []struct {
		name string
		rdb  func(*testing.B) redis.UniversalClient
	}{
		{"node", func(b *testing.B) redis.UniversalClient { return contenderClient(b) }},
		{"cluster", contenderClusterClient},
	} {
		b.Run(tc.name+"/shards=8", func(b *testing.B) {
			s, sl := redisItemOn(b, tc.rdb(b), item)
			runSharded(b, s, sl, -1)
			if st := shardedState(b, s, sl); st.Holds != int64(b.N) {
				b.Fatalf("after %d reserves: %d holds", b.N, st.Holds)
			}
		})
	}
}

// runSharded reserves one unit per op for a user no earlier op used, skipping users whose home shard
// is skipHome (-1 skips none), and fails on any answer but a fresh RESERVED. It returns how many
// units the reserves borrowed.
func runSharded(b *testing.B, s *stock.Store, sl sale.Sale, skipHome int) int64 {
	b.Helper()
	ctx := context.Background()
	shards := sl.Items[0].ShardCount()
	var users, borrowed atomic.Int64
	b.ReportAllocs()
	b.SetParallelism(max(1, contenders/runtime.GOMAXPROCS(0)))
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			user := "u" + strconv.FormatInt(users.Add(1), 10)
			for stock.HomeShard(user, shards) == skipHome {
				user = "u" + strconv.FormatInt(users.Add(1), 10)
			}
			r, err := s.Reserve(ctx, stock.Request{
				SaleID: sl.ID, ItemID: hotItem, UserID: user, IdemKey: "k",
				OrderID: uuid.Must(uuid.NewV7()), Shards: shards,
			})
			if err != nil || r.Outcome != outcome.Reserved || r.Replay {
				b.Errorf("reserve = %+v, %v; want a fresh RESERVED", r, err)
				return
			}
			borrowed.Add(int64(r.Borrowed))
		}
	})
	b.StopTimer()
	b.ReportMetric(float64(borrowed.Load())/float64(b.N), "borrowed/op")
	return borrowed.Load()
}

func shardedState(b *testing.B, s *stock.Store, sl sale.Sale) stock.ItemState {
	b.Helper()
	st, err := s.Snapshot(context.Background(), sl.ID, sl.Items)
	if err != nil {
		b.Fatal(err)
	}
	return st[0]
}
