package orders_test

import (
	"context"
	"testing"

	"github.com/fsctl/fsctl/internal/checkout/orders"
	"github.com/fsctl/fsctl/internal/harness/testenv"
)

// openStore gives a test a migrated database and a store on it, closed at cleanup.
func openStore(tb testing.TB) *orders.Store {
	tb.Helper()
	dbURL := testenv.Postgres(tb)
	ctx := context.Background()
	if _, err := orders.Migrate(ctx, dbURL); err != nil {
		tb.Fatalf("migrate: %v", err)
	}
	s, err := orders.Open(ctx, dbURL)
	if err != nil {
		tb.Fatalf("open: %v", err)
	}
	tb.Cleanup(s.Close)
	return s
}
