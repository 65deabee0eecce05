package blast_test

import (
	"context"
	"io"
	"log/slog"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/fsctl/fsctl/internal/checkout/auth"
	"github.com/fsctl/fsctl/internal/checkout/events"
	"github.com/fsctl/fsctl/internal/checkout/orders"
	"github.com/fsctl/fsctl/internal/checkout/provision"
	"github.com/fsctl/fsctl/internal/checkout/stock"
	"github.com/fsctl/fsctl/internal/contract/outcome"
	"github.com/fsctl/fsctl/internal/contract/sale"
	"github.com/fsctl/fsctl/internal/harness/stack"
	"github.com/fsctl/fsctl/internal/harness/testenv"
	"github.com/fsctl/fsctl/internal/target/profile"
	"github.com/fsctl/fsctl/server"
	checkouttest "github.com/fsctl/fsctl/server/servertest"
)

var testSecret = checkouttest.Secret

// checkout is the bundled server on the real services, with its own database, topics and sale.
type checkout struct {
	base, postgresURL string
	app               *server.App
	sale              sale.Sale
}

func testSale(t *testing.T, quantity int64, limit int) sale.Sale {
	sl := sale.Sale{ID: testenv.ID(t, "sale"), OpensAt: time.Now().Add(-time.Minute), PerUserLimit: limit,
		HoldTTL: 10 * time.Minute, Items: []sale.Item{{ID: "hot", Quantity: quantity, PriceCents: 4999}}}
	sl.Normalize()
	return sl
}

// startCheckout runs the API and the order consumer in-process and provisions a one-item sale.
func startCheckout(t *testing.T, quantity int64, limit int) checkout {
	t.Helper()
	c := checkouttest.Start(t, checkouttest.Options{Quantity: quantity, Limit: limit})
	return checkout{base: c.Base, postgresURL: c.PostgresURL, app: c.App, sale: c.Sale}
}

// overseller is a deliberately broken Redis stage: it runs the real atomic reserve but turns a
// SOLD_OUT into a reservation, as a server that skipped the stock check would.
type overseller struct{ *stock.Store }

func (o overseller) Reserve(ctx context.Context, r stock.Request) (stock.Reservation, error) {
	rv, err := o.Store.Reserve(ctx, r)
	if err == nil && rv.Outcome == outcome.SoldOut {
		rv = stock.Reservation{Outcome: outcome.Reserved, OrderID: r.OrderID, ExpiresAt: time.Now().Add(time.Minute), Replicas: -1}
	}
	return rv, err
}

// Confirm says yes to every hand-off: the made-up reservations have no order in Redis for the
// real confirm to find, and a server that skips the stock check skips that too.
func (overseller) Confirm(context.Context, string, string, int, int, uuid.UUID, int64) (bool, error) {
	return true, nil
}

// dropPublisher accepts every order and sends it nowhere: the broken server needs no Kafka.
type dropPublisher struct{}

func (dropPublisher) PublishOrderPlaced(context.Context, events.OrderPlaced) error { return nil }

// startOverseller serves the purchase path with the overseller on the real Redis and PostgreSQL,
// and returns its URL, its sale and its database.
func startOverseller(t *testing.T, quantity int64, limit int) (base string, sl sale.Sale, postgresURL string) {
	t.Helper()
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
	t.Cleanup(db.Close)
	st := stock.New(rdb)
	sl = testSale(t, quantity, limit)
	if _, err := provision.Sale(ctx, db, st, sl, provision.Options{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Reset(context.Background(), sl) })
	verifier, err := auth.NewVerifier(testSecret, time.Now)
	if err != nil {
		t.Fatal(err)
	}
	cfg := server.DefaultConfig()
	cfg.SoldOut = server.SoldOutOff
	srv := server.New(cfg, server.Deps{Auth: verifier, Stock: overseller{st}, Orders: db, Publisher: dropPublisher{},
		Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	hs := httptest.NewServer(srv.Handler())
	t.Cleanup(hs.Close)
	return hs.URL, sl, pgURL
}

// bundled reads the bundled server's stores on the test stack through its own profile.
func bundled(t *testing.T, postgresURL string) *profile.Target {
	t.Helper()
	tg, err := profile.Connect(context.Background(), profile.Default(), stack.EndpointsFromEnv().RedisURL, postgresURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(tg.Close)
	return tg
}
