package orders_test

import (
	"context"
	"slices"
	"testing"

	"github.com/fsctl/fsctl/internal/checkout/orders"
	"github.com/fsctl/fsctl/internal/contract/sale"
	"github.com/fsctl/fsctl/internal/harness/testenv"
	"github.com/fsctl/fsctl/migrations"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"
)

func TestPlaceBatchRecordsShard(t *testing.T) {
	t.Parallel()
	s := openStore(t)
	ctx := context.Background()
	if err := s.SaveSale(ctx, testSale("s", sale.Item{ID: "item", Quantity: 5, Shards: 64})); err != nil {
		t.Fatalf("save sale: %v", err)
	}
	first, last := placement("s", "item", "u1", 0), placement("s", "item", "u2", 0)
	first.Shard, last.Shard = 0, 63
	mustPlace(t, s, []orders.Placement{first, last}, orders.Placed)
	for _, p := range []orders.Placement{first, last} {
		if o := mustGet(t, s, p.OrderID); o.Shard != p.Shard || o.PayingSince != nil || o.PaymentRef != "" {
			t.Errorf("order %s: got %+v, want shard %d, no claim, no payment ref", p.OrderID, o, p.Shard)
		}
	}
	for _, shard := range []int{-1, 64} {
		bad := placement("s", "item", "u3", 0)
		bad.Shard = shard
		if _, err := s.PlaceBatch(ctx, []orders.Placement{bad}); err == nil {
			t.Errorf("shard %d: want an error", shard)
		}
	}
	checkItem(t, s, "s", "item", 2)
}

// Migration 00005 swaps place_order's signature; its Down must give the old one back, so a
// rollback leaves a database that the previous release can write to.
func TestPlaceOrderShardMigrationDownAndUp(t *testing.T) {
	t.Parallel()
	dbURL := testenv.Postgres(t)
	ctx := context.Background()
	cfg, err := pgx.ParseConfig(dbURL)
	if err != nil {
		t.Fatal(err)
	}
	db := stdlib.OpenDB(*cfg)
	defer db.Close()
	p, err := goose.NewProvider(goose.DialectPostgres, db, migrations.FS)
	if err != nil {
		t.Fatalf("goose: %v", err)
	}
	signatures := func() []string {
		t.Helper()
		rows, err := db.QueryContext(ctx,
			`SELECT pg_get_function_identity_arguments(oid) FROM pg_proc WHERE proname = 'place_order' ORDER BY 1`)
		if err != nil {
			t.Fatalf("list place_order: %v", err)
		}
		defer rows.Close()
		var out []string
		for rows.Next() {
			var sig string
			if err := rows.Scan(&sig); err != nil {
				t.Fatal(err)
			}
			out = append(out, sig)
		}
		return out
	}
	const (
		withShard = "p_id uuid, p_sale text, p_item text, p_user text, p_slot smallint, p_shard smallint, p_created timestamp with time zone, p_expires timestamp with time zone"
		without   = "p_id uuid, p_sale text, p_item text, p_user text, p_slot smallint, p_created timestamp with time zone, p_expires timestamp with time zone"
	)
	if _, err := p.UpTo(ctx, 5); err != nil {
		t.Fatalf("up to 5: %v", err)
	}
	if got := signatures(); !slices.Equal(got, []string{withShard}) {
		t.Fatalf("after up: got %q, want only the shard version", got)
	}
	if _, err := p.DownTo(ctx, 4); err != nil {
		t.Fatalf("down to 4: %v", err)
	}
	if got := signatures(); !slices.Equal(got, []string{without}) {
		t.Fatalf("after down: got %q, want only the 7-argument version", got)
	}
	if _, err := p.UpTo(ctx, 5); err != nil {
		t.Fatalf("up again: %v", err)
	}
	if got := signatures(); !slices.Equal(got, []string{withShard}) {
		t.Fatalf("after up again: got %q", got)
	}
}
