package reconcile_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/fsctl/fsctl/internal/harness/stack"
	"github.com/fsctl/fsctl/internal/harness/testenv"
	"github.com/fsctl/fsctl/internal/platform/kafkaconn"
	"github.com/fsctl/fsctl/internal/target/profile"
	"github.com/fsctl/fsctl/reconcile"
)

// genericTarget is the bundled checkout read through a NON-deep copy of its profile that declares
// no fix: what reconcile offers any target, on real services.
type genericTarget struct {
	tg   *target
	p    profile.Profile
	keys profile.ShardKeys
}

func newGenericTarget(t *testing.T, quantity int64) *genericTarget {
	t.Helper()
	tg := newTarget(t, quantity, 1)
	p := *profile.Default()
	p.Deep, p.Fix = "", profile.Fix{}
	p.Kafka.Topic, p.Kafka.DeadLetter, p.Kafka.Group = tg.c.OrdersTopic, tg.c.DeadLetterTopic, tg.c.ConsumerGroup
	return &genericTarget{tg: tg, p: p, keys: p.Keys(tg.c.Sale.ID, "hot", 1)[0]}
}

// withFixes is the profile declaring every fix.
func (g *genericTarget) withFixes() profile.Profile {
	p := g.p
	p.Fix = profile.Fix{Sold: profile.Default().Fix.Sold, Stock: profile.Recount, Buyers: profile.Recount}
	return p
}

func (g *genericTarget) run(t *testing.T, p profile.Profile, fix bool) *reconcile.Report {
	t.Helper()
	rep, err := runProfile(t, &p, stack.EndpointsFromEnv().RedisURL, g.tg.c.PostgresURL, g.tg.c.Sale.ID, g.tg.c.Brokers, fix)
	if err != nil {
		t.Fatalf("reconcile through the profile: %v", err)
	}
	return rep
}

func runProfile(t *testing.T, p *profile.Profile, redisURL, postgresURL, sale string, brokers []string, fix bool) (*reconcile.Report, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	rep, err := reconcile.Run(ctx, reconcile.Config{Profile: p, RedisURL: redisURL, PostgresURL: postgresURL, SaleID: sale,
		Kafka: kafkaconn.Conn{Brokers: brokers}, Fix: fix, Confirm: 50 * time.Millisecond})
	return &rep, err
}

// kinds lists an item's finding kinds with what fix says of each.
func kinds(rep *reconcile.Report) map[string]reconcile.Finding {
	out := map[string]reconcile.Finding{}
	for _, it := range rep.Items {
		for _, f := range it.Findings {
			out[f.Check] = f
		}
	}
	return out
}

func TestRunProfileFindsAndFixesDrift(t *testing.T) {
	g := newGenericTarget(t, 10)
	g.tg.buy(t, 3)
	rep := g.run(t, g.p, false)
	if !rep.OK() || len(rep.Items) != 1 || rep.Items[0].Counts.Pending != 3 || rep.Items[0].Stock != 7 || rep.Profile != "fsctl" || rep.OrderByOrder {
		t.Fatalf("settled purchases: want a clean report of 3 pending, stock 7: %+v", rep)
	}
	if rep.Kafka == nil || rep.Kafka.Error != "" || rep.Kafka.Group.Lag != 0 {
		t.Fatalf("kafka section: %+v", rep.Kafka)
	}

	rdb := testenv.Redis(t)
	ctx := context.Background()
	if err := rdb.Incr(ctx, g.keys.Stock).Err(); err != nil {
		t.Fatal(err)
	}
	if err := rdb.HDel(ctx, g.keys.Buyers, "buyer-1").Err(); err != nil {
		t.Fatal(err)
	}
	g.tg.exec(t, `UPDATE sale_items SET sold = sold + 1 WHERE sale_id = $1`, g.tg.c.Sale.ID)

	rep = g.run(t, g.p, true) // --fix, but the profile declares no fix
	found := kinds(rep)
	for kind, want := range map[string]string{
		reconcile.KindUnits:             "1 unit(s) doubled",
		reconcile.KindSoldCounter:       "4, live orders 3",
		reconcile.KindOrderWithoutBuyer: "buyer-1",
	} {
		f, ok := found[kind]
		if !ok || !strings.Contains(f.Detail, want) || !strings.Contains(f.Fix, "the profile declares no fix for this") {
			t.Errorf("%s: want %q and no declared fix, got %+v", kind, want, f)
		}
	}
	if len(found) != 3 || len(rep.Actions) != 0 || rep.OK() {
		t.Fatalf("without declared fixes: want the 3 findings and no change: %+v", rep)
	}
	if n, _ := rdb.Get(ctx, g.keys.Stock).Int64(); n != 8 {
		t.Fatalf("nothing declared, yet the stock changed: %d", n)
	}

	rep = g.run(t, g.withFixes(), true)
	if len(rep.Actions) != 3 || !rep.OK() {
		t.Fatalf("declared fixes: want 3 changes and a clean state after them: %+v", rep)
	}
	for _, a := range rep.Actions {
		if a.Error != "" {
			t.Errorf("fix failed: %+v", a)
		}
	}
	if rep = g.run(t, g.p, false); !rep.OK() {
		t.Fatalf("a second run after the fix: %+v", rep)
	}
	if n, _ := rdb.Get(ctx, g.keys.Stock).Int64(); n != 7 {
		t.Fatalf("stock after the recount: %d, want 7", n)
	}
	if mask, _ := rdb.HGet(ctx, g.keys.Buyers, "buyer-1").Int(); mask != 1 {
		t.Fatalf("buyer-1 after the recount: %d, want 1", mask)
	}
}

func TestRunProfileNeverFixesOversell(t *testing.T) {
	g := newGenericTarget(t, 5)
	g.tg.buy(t, 2)
	rdb := testenv.Redis(t)
	ctx := context.Background()
	if err := rdb.DecrBy(ctx, g.keys.Stock, 10).Err(); err != nil { // 3 → −7
		t.Fatal(err)
	}
	rep := g.run(t, g.withFixes(), true)
	f, ok := kinds(rep)[reconcile.KindNegativeShard]
	if !ok || !strings.Contains(f.Detail, "-7") || !strings.Contains(f.Fix, "by hand") || rep.OK() {
		t.Fatalf("negative stock: want a negative-shard finding left to a person: %+v", rep)
	}
	if u := kinds(rep)[reconcile.KindUnits]; !strings.Contains(u.Fix, "left alone: oversold") {
		t.Fatalf("units of an oversold item must not be recounted: %+v", u)
	}
	if len(rep.Actions) != 0 {
		t.Fatalf("oversell touched: %+v", rep.Actions)
	}
	if n, _ := rdb.Get(ctx, g.keys.Stock).Int64(); n != -7 {
		t.Fatalf("stock after --fix: %d, want -7 untouched", n)
	}
}

func TestRunProfileNamesTheBrokenQuery(t *testing.T) {
	g := newGenericTarget(t, 5)
	p := g.p
	p.SQL.Live = "SELECT count(*) FROM no_such_orders WHERE item_id = @item"
	_, err := runProfile(t, &p, stack.EndpointsFromEnv().RedisURL, g.tg.c.PostgresURL, g.tg.c.Sale.ID, nil, false)
	var qe *profile.QueryError
	if !errors.As(err, &qe) || qe.Query != "sql.live" || !strings.Contains(err.Error(), "sql.live") ||
		!strings.Contains(err.Error(), `relation "no_such_orders" does not exist`) {
		t.Fatalf("broken sql.live: want an error naming it with PostgreSQL's own, got %v", err)
	}
}

// TestRunProfileUnknownLagIsInFlight: when the profile declares an order log that cannot be read,
// units Redis sold that PostgreSQL lacks may still be on their way, so they are in flight, not
// lost; with the log read (lag 0) the same gap is a finding.
func TestRunProfileUnknownLagIsInFlight(t *testing.T) {
	g := newGenericTarget(t, 10)
	g.tg.buy(t, 2)
	if err := testenv.Redis(t).DecrBy(context.Background(), g.keys.Stock, 2).Err(); err != nil {
		t.Fatal(err)
	}
	rep, err := runProfile(t, &g.p, stack.EndpointsFromEnv().RedisURL, g.tg.c.PostgresURL, g.tg.c.Sale.ID, nil, false)
	if err != nil || !rep.OK() || rep.Items[0].InFlight != 2 || rep.Kafka != nil {
		t.Fatalf("no brokers for a declared log: want 2 units in flight, no finding: %+v %v", rep, err)
	}
	rep = g.run(t, g.p, false)
	if f, ok := kinds(rep)[reconcile.KindUnits]; !ok || !strings.Contains(f.Detail, "2 unit(s) lost") || rep.Items[0].InFlight != 0 {
		t.Fatalf("lag 0: want 2 units lost: %+v", rep)
	}
}

// TestRunProfileLeavesACounterThatMovesBetweenReads: units drift that changes between the two
// reads is reported, but not recounted: purchases are running, and a recount could give back a
// unit whose order is still on its way.
func TestRunProfileLeavesACounterThatMovesBetweenReads(t *testing.T) {
	g := newGenericTarget(t, 10)
	g.tg.buy(t, 2)
	rdb := testenv.Redis(t)
	ctx := context.Background()
	if err := rdb.IncrBy(ctx, g.keys.Stock, 2).Err(); err != nil { // 8 → 10: two units doubled
		t.Fatal(err)
	}
	p := g.withFixes()
	// During the pause between the reads (it begins with the progress line announcing the second
	// read), one more unit appears.
	pausing := make(chan struct{})
	moved := make(chan error, 1)
	go func() {
		select {
		case <-pausing:
			moved <- rdb.Incr(ctx, g.keys.Stock).Err()
		case <-time.After(30 * time.Second):
			moved <- errors.New("the first read never announced a second one")
		}
	}()
	rep, err := reconcile.Run(ctx, reconcile.Config{Profile: &p, RedisURL: stack.EndpointsFromEnv().RedisURL, PostgresURL: g.tg.c.PostgresURL,
		SaleID: g.tg.c.Sale.ID, Kafka: kafkaconn.Conn{Brokers: g.tg.c.Brokers}, Fix: true, Confirm: 1500 * time.Millisecond,
		Progress: &onLine{prefix: "reconcile: " + g.tg.c.Sale.ID + ": something differs", seen: pausing}})
	if err != nil {
		t.Fatal(err)
	}
	if err := <-moved; err != nil {
		t.Fatal(err)
	}
	u, ok := kinds(&rep)[reconcile.KindUnits]
	if !ok || !strings.Contains(u.Detail, "redis stock 11") || !strings.Contains(u.Fix, "moved between the two reads") {
		t.Fatalf("want the units finding of the second read, left alone: %+v", rep)
	}
	if len(rep.Actions) != 0 {
		t.Fatalf("a moving counter was recounted: %+v", rep.Actions)
	}
	if n, _ := rdb.Get(ctx, g.keys.Stock).Int64(); n != 11 {
		t.Fatalf("stock after --fix: %d, want 11 untouched", n)
	}
}
