package provision_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/fsctl/fsctl/internal/checkout/orders"
	"github.com/fsctl/fsctl/internal/checkout/provision"
	"github.com/fsctl/fsctl/internal/checkout/stock"
	"github.com/fsctl/fsctl/internal/contract/sale"
	"github.com/fsctl/fsctl/internal/harness/testenv"
)

// TestSaleKeepsPostgresAndRedisInStep creates a sale, sells from it, changes its quantity and
// resets it, checking after each step that PostgreSQL and Redis tell the same story.
func TestSaleKeepsPostgresAndRedisInStep(t *testing.T) {
	ctx := context.Background()
	st := stock.New(testenv.Redis(t))
	url := testenv.Postgres(t)
	if _, err := orders.Migrate(ctx, url); err != nil {
		t.Fatal(err)
	}
	db, err := orders.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	sl := sale.Sale{ID: testenv.ID(t, "prov"), OpensAt: time.Now().Add(-time.Minute), Items: []sale.Item{{ID: "a", Quantity: 10}}}
	sl.Normalize()
	t.Cleanup(func() { _ = st.Reset(ctx, sl) })

	rep, err := provision.Sale(ctx, db, st, sl, provision.Options{})
	if err != nil || rep.Items[0].Action != stock.Loaded || rep.Items[0].Stock != 10 {
		t.Fatalf("first create: %+v, %v", rep, err)
	}
	// Sell one unit all the way to PostgreSQL.
	id := uuid.Must(uuid.NewV7())
	rv, err := st.Reserve(ctx, stock.Request{SaleID: sl.ID, ItemID: "a", UserID: "u", IdemKey: "k", OrderID: id})
	if err != nil || rv.OrderID != id {
		t.Fatalf("reserve: %+v %v", rv, err)
	}
	if _, err := db.PlaceBatch(ctx, []orders.Placement{{OrderID: id, SaleID: sl.ID, ItemID: "a", UserID: "u", CreatedAt: time.Now(), ExpiresAt: rv.ExpiresAt}}); err != nil {
		t.Fatal(err)
	}

	sl.Items[0].Quantity = 25
	rep, err = provision.Sale(ctx, db, st, sl, provision.Options{})
	if err != nil || rep.Items[0].Action != stock.Adjusted || rep.Items[0].Stock != 24 || rep.Items[0].Sold != 1 {
		t.Fatalf("raising quantity: %+v, %v; want adjusted to 24 with 1 sold", rep, err)
	}
	loaded, err := db.LoadSale(ctx, sl.ID)
	if err != nil || loaded.Items[0].Quantity != 25 {
		t.Fatalf("postgres quantity %+v, %v", loaded, err)
	}

	sl.Items[0].Quantity = 0
	if _, err := provision.Sale(ctx, db, st, sl, provision.Options{}); err == nil || !strings.Contains(err.Error(), "already sold") {
		t.Fatalf("lowering quantity below sold: %v, want a refusal", err)
	}

	sl.Items[0].Quantity = 25
	rep, err = provision.Sale(ctx, db, st, sl, provision.Options{Reset: true})
	if err != nil || rep.Items[0].Action != stock.Loaded || rep.Items[0].Stock != 25 || rep.Items[0].Sold != 0 {
		t.Fatalf("reset: %+v, %v; want a fresh counter of 25 and nothing sold", rep, err)
	}
	if _, err := db.GetOrder(ctx, id); err == nil {
		t.Fatal("reset left the sale's order in PostgreSQL")
	}
}
