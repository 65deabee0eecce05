package saleops

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/fsctl/fsctl/internal/checkout/provision"
	"github.com/fsctl/fsctl/internal/checkout/stock"
	"github.com/fsctl/fsctl/internal/contract/outcome"
	"github.com/fsctl/fsctl/internal/contract/sale"
	"github.com/fsctl/fsctl/internal/harness/stack"
	"github.com/fsctl/fsctl/internal/harness/testenv"
)

// openTestSale opens the stores on a database of the test's own, creates a sale there (item hot,
// 5 units over 2 shards, and cold, 3 units) and wipes its Redis keys when the test ends.
func openTestSale(t *testing.T) (*Stores, sale.Sale) {
	t.Helper()
	rdb := testenv.Redis(t)
	ctx := context.Background()
	s, err := OpenMigrated(ctx, Endpoints{RedisURL: stack.EndpointsFromEnv().RedisURL, PostgresURL: testenv.Postgres(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	sl := sale.Sale{ID: testenv.ID(t, "sale"), Name: "saleops test sale", OpensAt: time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC),
		PerUserLimit: 1, HoldTTL: 10 * time.Minute,
		Items: []sale.Item{{ID: "hot", Name: "Hot item", Quantity: 5, Shards: 2}, {ID: "cold", Name: "Cold item", Quantity: 3}}}
	t.Cleanup(func() { _ = stock.New(rdb).Wipe(context.Background(), sl) })
	rep, err := s.Create(ctx, sl, provision.Options{})
	if err != nil || len(rep.Items) != 2 || rep.Items[0].Stock != 5 || rep.Items[1].Stock != 3 {
		t.Fatalf("create: %+v, %v", rep, err)
	}
	return s, sl
}

// TestPauseAndResume: a pause writes both stores and says what each held; the view of the paused
// sale has no note (the stores agree); resume undoes it.
func TestPauseAndResume(t *testing.T) {
	s, sl := openTestSale(t)
	ctx := context.Background()
	v, err := s.View(ctx, sl.ID)
	if err != nil || len(v.Notes) != 0 || v.ListRow().LoadedShards != 3 {
		t.Fatalf("view of a new sale: %+v, %v", v, err)
	}
	c, err := s.Pause(ctx, sl.ID, true)
	if err != nil || !c.Paused || c.Postgres != (FlagChange{Before: false, After: true}) || c.Redis != (ShardCount{Shards: 3, PausedBefore: 0, PausedAfter: 3}) || c.Room != "" {
		t.Fatalf("pause: %+v, %v", c, err)
	}
	v, err = s.View(ctx, sl.ID)
	if err != nil || !v.Sale.Paused || len(v.Notes) != 0 {
		t.Fatalf("view of the paused sale: %+v, %v", v, err)
	}
	for _, it := range v.Items {
		for _, sh := range it.Redis.Shards {
			if !sh.Paused {
				t.Errorf("%s shard %d runs in the view of the paused sale", it.Item, sh.Shard)
			}
		}
	}
	c, err = s.Pause(ctx, sl.ID, false)
	if err != nil || c.Paused || c.Postgres != (FlagChange{Before: true, After: false}) || c.Redis != (ShardCount{Shards: 3, PausedBefore: 3, PausedAfter: 0}) {
		t.Fatalf("resume: %+v, %v", c, err)
	}
}

// TestLiveViewReadsWhatViewReads: the admin API's counters are the CLI's.
func TestLiveViewReadsWhatViewReads(t *testing.T) {
	s, sl := openTestSale(t)
	ctx := context.Background()
	full, err := s.View(ctx, sl.ID)
	if err != nil {
		t.Fatal(err)
	}
	sl, err = s.Load(ctx, sl.ID)
	if err != nil {
		t.Fatal(err)
	}
	live, err := LiveView(ctx, s.Stock, sl)
	if err != nil {
		t.Fatal(err)
	}
	for i, it := range live.Items {
		want := full.Items[i]
		if it.Redis.Stock != want.Redis.Stock || len(it.Redis.Shards) != len(want.Redis.Shards) || it.Postgres.Epoch != want.Postgres.Epoch {
			t.Errorf("item %s: live %+v, full %+v", it.Item, it, want)
		}
	}
	rows, err := s.List(ctx)
	if err != nil || len(rows) != 1 || rows[0].ID != sl.ID || rows[0].Quantity != 8 || rows[0].Shards != 3 {
		t.Errorf("list: %+v, %v", rows, err)
	}
}

// TestUnknownSale: a sale PostgreSQL does not hold is an *UnknownSaleError, still NOT_FOUND.
func TestUnknownSale(t *testing.T) {
	s, _ := openTestSale(t)
	ctx := context.Background()
	for name, call := range map[string]func() error{
		"load":  func() error { _, err := s.Load(ctx, "no-such-sale"); return err },
		"view":  func() error { _, err := s.View(ctx, "no-such-sale"); return err },
		"pause": func() error { _, err := s.Pause(ctx, "no-such-sale", true); return err },
	} {
		err := call()
		if _, ok := errors.AsType[*UnknownSaleError](err); !ok || outcome.CodeOf(err) != outcome.NotFound || err.Error() != "no sale no-such-sale in PostgreSQL" {
			t.Errorf("%s of an unknown sale: %v", name, err)
		}
	}
}

func TestOpenRefusesABadRedisURL(t *testing.T) {
	pg := testenv.Postgres(t)
	_, err := Open(context.Background(), Endpoints{RedisURL: "http://127.0.0.1:6379", PostgresURL: pg})
	if _, ok := errors.AsType[*URLError](err); !ok {
		t.Errorf("Open with an http:// Redis address: %v (%T), want a *URLError", err, err)
	}
}
