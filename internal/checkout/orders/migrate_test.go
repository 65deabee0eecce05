package orders_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/fsctl/fsctl/internal/checkout/orders"
	"github.com/fsctl/fsctl/internal/harness/testenv"
)

func TestMigrateTwiceIsNoOp(t *testing.T) {
	t.Parallel()
	dbURL := testenv.Postgres(t)
	ctx := context.Background()

	before, err := orders.MigrationStatus(ctx, dbURL)
	if err != nil {
		t.Fatalf("status: %v", err)
	}
	if before.Current != 0 || before.Latest < 3 || before.UpToDate() {
		t.Fatalf("fresh database: got %+v, want current 0 and latest >= 3", before)
	}

	first, err := orders.Migrate(ctx, dbURL)
	if err != nil {
		t.Fatalf("first migrate: %v", err)
	}
	if want := []int64{1, 2, 3}; !slices.Equal(first.Applied[:3], want) || first.Current != first.Latest {
		t.Fatalf("first migrate: got %+v, want applied to start with %v and current == latest", first, want)
	}

	second, err := orders.Migrate(ctx, dbURL)
	if err != nil {
		t.Fatalf("second migrate: %v", err)
	}
	if len(second.Applied) != 0 || second.MigrationState != first.MigrationState {
		t.Fatalf("second migrate: got %+v, want nothing applied and state %+v", second, first.MigrationState)
	}

	after, err := orders.MigrationStatus(ctx, dbURL)
	if err != nil {
		t.Fatalf("status: %v", err)
	}
	if !after.UpToDate() || after.Current != first.Latest {
		t.Fatalf("status after migrate: got %+v", after)
	}
}

func TestOpenUnreachableNamesAddress(t *testing.T) {
	t.Parallel()
	_, err := orders.Open(context.Background(), "postgres://fsctl@127.0.0.1:1/nope?sslmode=disable&connect_timeout=2")
	if err == nil || !strings.Contains(err.Error(), "127.0.0.1:1/nope") {
		t.Fatalf("got %v, want an error naming 127.0.0.1:1/nope", err)
	}
	_, err = orders.MigrationStatus(context.Background(), "postgres://fsctl@127.0.0.1:1/nope?sslmode=disable&connect_timeout=2")
	if err == nil || !strings.Contains(err.Error(), "127.0.0.1:1/nope") {
		t.Fatalf("status: got %v, want an error naming 127.0.0.1:1/nope", err)
	}
}
