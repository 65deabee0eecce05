package benchmarks

import (
	"context"
	"errors"
	"math"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/fsctl/fsctl/benchmarks/internal/benchrun"
	"github.com/fsctl/fsctl/internal/checkout/orders"
	"github.com/fsctl/fsctl/internal/contract/sale"
	"github.com/fsctl/fsctl/internal/harness/testenv"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// contenders is how many goroutines fight over the one hot row: b.SetParallelism multiplies it by
// GOMAXPROCS, so the parallelism is contenders/GOMAXPROCS (32 on the 2-core machines), giving ~64
// goroutines whatever the core count — a burst's worth of checkout handlers, not one per core.
const contenders = 64

const (
	hotSale = "bench"
	hotItem = "hot"
)

// hotItemStore prepares a migrated database holding one item with quantity math.MaxInt32, so no
// run ever sells out, and a pool with a connection for every contender.
func hotItemStore(b *testing.B) *pgxpool.Pool {
	b.Helper()
	dbURL := testenv.Postgres(b)
	ctx := context.Background()
	if _, err := orders.Migrate(ctx, dbURL); err != nil {
		b.Fatalf("migrate: %v", err)
	}
	cfg, err := pgxpool.ParseConfig(dbURL)
	if err != nil {
		b.Fatalf("parse url: %v", err)
	}
	cfg.MaxConns = contenders + 4
	cfg.MinConns = contenders
	s, err := orders.OpenConfig(ctx, cfg)
	if err != nil {
		b.Fatalf("open: %v", err)
	}
	b.Cleanup(s.Close)
	err = s.SaveSale(ctx, sale.Sale{
		ID: hotSale, Name: hotSale, OpensAt: time.Now(), PerUserLimit: 1, HoldTTL: time.Minute,
		Items: []sale.Item{{ID: hotItem, Name: hotItem, Quantity: math.MaxInt32}},
	})
	if err != nil {
		b.Fatalf("save sale: %v", err)
	}
	return s.Pool()
}

// runContended runs reserve ~contenders-wide and checks afterwards that every op took one unit.
func runContended(b *testing.B, pool *pgxpool.Pool, reserve func(context.Context, *pgxpool.Pool) error) {
	b.Helper()
	ctx := context.Background()
	b.SetParallelism(max(1, contenders/runtime.GOMAXPROCS(0)))
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if err := reserve(ctx, pool); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.StopTimer()
	var sold int64
	if err := pool.QueryRow(ctx, `SELECT sold FROM sale_items WHERE sale_id = $1 AND id = $2`, hotSale, hotItem).Scan(&sold); err != nil {
		b.Fatalf("read sold: %v", err)
	}
	// Each calibration round calls the benchmark afresh, on a new database, so sold must be b.N.
	if sold != int64(b.N) {
		b.Fatalf("sold %d after %d reserves", sold, b.N)
	}
}

var errSoldOut = errors.New("sold out (quantity should never run out here)")

// BenchmarkPostgresConditionalUpdate reserves with one guarded UPDATE: every op queues on the hot
// row's lock, one commit at a time.
func BenchmarkPostgresConditionalUpdate(b *testing.B) {
	pool := hotItemStore(b)
	runContended(b, pool, func(ctx context.Context, pool *pgxpool.Pool) error {
		tag, err := pool.Exec(ctx,
			`UPDATE sale_items SET sold = sold + 1 WHERE sale_id = $1 AND id = $2 AND sold < quantity`, hotSale, hotItem)
		if err != nil {
			return err
		}
		if tag.RowsAffected() != 1 {
			return errSoldOut
		}
		return nil
	})
}

// BenchmarkPostgresSelectForUpdate reserves the textbook way: lock the row, check in Go, update,
// commit — four round-trips with the row lock held across them.
func BenchmarkPostgresSelectForUpdate(b *testing.B) {
	pool := hotItemStore(b)
	runContended(b, pool, func(ctx context.Context, pool *pgxpool.Pool) error {
		return pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
			var quantity, sold int64
			err := tx.QueryRow(ctx,
				`SELECT quantity, sold FROM sale_items WHERE sale_id = $1 AND id = $2 FOR UPDATE`, hotSale, hotItem).
				Scan(&quantity, &sold)
			if err != nil {
				return err
			}
			if sold >= quantity {
				return errSoldOut
			}
			_, err = tx.Exec(ctx, `UPDATE sale_items SET sold = sold + 1 WHERE sale_id = $1 AND id = $2`, hotSale, hotItem)
			return err
		})
	})
}

// BenchmarkPlaceBatch records orders as the consumer does in a burst: batches of 500 placements of
// the one hot item (orders.PlaceBatch, one transaction a batch, on one connection), each a new buyer
// with an Idempotency-Key. ns/op is one order's share of a batch's round trip; pg-cpu-ns/op is the
// PostgreSQL backend's own CPU an order, read from /proc where the database runs on this machine
// (not reported elsewhere).
func BenchmarkPlaceBatch(b *testing.B) {
	const batch = 500
	ctx := context.Background()
	dbURL := testenv.Postgres(b)
	if _, err := orders.Migrate(ctx, dbURL); err != nil {
		b.Fatalf("migrate: %v", err)
	}
	cfg, err := pgxpool.ParseConfig(dbURL)
	if err != nil {
		b.Fatalf("parse url: %v", err)
	}
	cfg.MaxConns = 1 // one backend, whose CPU is read
	s, err := orders.OpenConfig(ctx, cfg)
	if err != nil {
		b.Fatalf("open: %v", err)
	}
	b.Cleanup(s.Close)
	err = s.SaveSale(ctx, sale.Sale{ID: hotSale, Name: hotSale, OpensAt: time.Now(), PerUserLimit: 1, HoldTTL: time.Minute,
		Items: []sale.Item{{ID: hotItem, Name: hotItem, Quantity: math.MaxInt32}}})
	if err != nil {
		b.Fatalf("save sale: %v", err)
	}
	created := time.Now()
	ps := make([]orders.Placement, batch)
	placed := 0
	cpu0, pid0 := backendCPU(ctx, b, s.Pool())
	b.ResetTimer()
	for n := 0; n < b.N; n += batch {
		ps = ps[:min(batch, b.N-n)]
		for i := range ps {
			ps[i] = orders.Placement{OrderID: uuid.Must(uuid.NewV7()), SaleID: hotSale, ItemID: hotItem,
				UserID: "buyer-" + strconv.Itoa(n+i), CreatedAt: created, ExpiresAt: created.Add(10 * time.Minute),
				IdemKey: "key-" + strconv.Itoa(n+i)}
		}
		res, err := s.PlaceBatch(ctx, ps)
		if err != nil {
			b.Fatal(err)
		}
		for _, r := range res {
			if r.Result == orders.Placed {
				placed++
			}
		}
	}
	b.StopTimer()
	if placed != b.N {
		b.Fatalf("%d of %d orders placed", placed, b.N)
	}
	if cpu1, pid1 := backendCPU(ctx, b, s.Pool()); cpu0 >= 0 && pid1 == pid0 {
		b.ReportMetric(float64(cpu1-cpu0)/float64(b.N), "pg-cpu-ns/op")
	}
}

// backendCPU is the CPU (user + system) of the PostgreSQL backend serving pool's one connection,
// from /proc, and its pid; -1 when the database is not a process of this machine.
func backendCPU(ctx context.Context, b *testing.B, pool *pgxpool.Pool) (time.Duration, int) {
	b.Helper()
	var pid int
	if err := pool.QueryRow(ctx, `SELECT pg_backend_pid()`).Scan(&pid); err != nil {
		b.Fatal(err)
	}
	cpu, err := benchrun.ProcCPU(pid)
	if err != nil {
		return -1, pid
	}
	return cpu, pid
}
