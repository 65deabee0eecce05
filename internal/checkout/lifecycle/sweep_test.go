package lifecycle_test

import (
	"context"
	"io"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/fsctl/fsctl/internal/checkout/events"
	"github.com/fsctl/fsctl/internal/checkout/lifecycle"
	"github.com/fsctl/fsctl/internal/checkout/orders"
	"github.com/fsctl/fsctl/internal/checkout/provision"
	"github.com/fsctl/fsctl/internal/checkout/stock"
	"github.com/fsctl/fsctl/internal/contract/sale"
	"github.com/fsctl/fsctl/internal/harness/testenv"
)

// countingPublisher records what the sweeper publishes; no consumer reads it, which is the
// situation under test (a consumer lagging behind for minutes).
type countingPublisher struct{ placed atomic.Int64 }

func (p *countingPublisher) PublishOrderPlaced(context.Context, events.OrderPlaced) error {
	p.placed.Add(1)
	return nil
}

func (p *countingPublisher) PublishOrderPaid(context.Context, events.OrderPaid) error { return nil }

// TestSweeperRepublishesOncePerOrphanAge: while the consumer lags, an unrecorded hold is
// re-published once per OrphanAge, not once per sweep.
func TestSweeperRepublishesOncePerOrphanAge(t *testing.T) {
	t.Parallel()
	rdb := testenv.Redis(t)
	pgURL := testenv.Postgres(t)
	ctx := context.Background()
	if _, err := orders.Migrate(ctx, pgURL); err != nil {
		t.Fatal(err)
	}
	db, err := orders.Open(ctx, pgURL)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	st := stock.New(rdb)
	sl := sale.Sale{ID: testenv.ID(t, "sweep"), OpensAt: time.Now().Add(-time.Minute), Items: []sale.Item{{ID: "hot", Quantity: 5, Shards: 2}}}
	sl.Normalize()
	if _, err := provision.Sale(ctx, db, st, sl, provision.Options{}); err != nil {
		t.Fatal(err)
	}
	defer st.Reset(ctx, sl) //nolint:errcheck
	for _, u := range []string{"u1", "u2", "u3"} {
		if rv, err := st.Reserve(ctx, stock.Request{SaleID: sl.ID, ItemID: "hot", UserID: u, IdemKey: "k", OrderID: uuid.Must(uuid.NewV7()), Shards: 2}); err != nil || rv.Outcome != "RESERVED" {
			t.Fatalf("reserve %s: %+v %v", u, rv, err)
		}
	}
	now := time.Now().Add(time.Minute) // every hold is older than the orphan age
	pub := &countingPublisher{}
	cfg := lifecycle.DefaultConfig()
	cfg.OrphanAge = 30 * time.Second
	svc := lifecycle.New(cfg, lifecycle.Deps{Orders: db, Stock: st, Publisher: pub,
		Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Now: func() time.Time { return now }})
	for range 3 {
		rep, err := svc.SweepOnce(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if got := pub.placed.Load(); got != 3 {
			t.Fatalf("after a sweep %d re-publishes (report %+v), want 3: one per orphaned hold", got, rep)
		}
	}
	now = now.Add(31 * time.Second)
	if _, err := svc.SweepOnce(ctx); err != nil {
		t.Fatal(err)
	}
	if got := pub.placed.Load(); got != 6 {
		t.Fatalf("after the orphan age passed: %d re-publishes, want 6", got)
	}
}
