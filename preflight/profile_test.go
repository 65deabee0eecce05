package preflight_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/fsctl/fsctl/internal/checkout/stock"
	"github.com/fsctl/fsctl/internal/contract/finding"
	"github.com/fsctl/fsctl/internal/harness/testenv"
	"github.com/fsctl/fsctl/internal/target/profile"
	"github.com/fsctl/fsctl/preflight"
	checkouttest "github.com/fsctl/fsctl/server/servertest"
)

// foreignCopy is the bundled server's profile with deep off, so preflight reads the bundled
// checkout the way it reads any foreign one: through the profile only.
func foreignCopy(c *checkouttest.Checkout) *profile.Profile {
	p := *profile.Default()
	p.Name, p.Deep = "fsctl-as-foreign", ""
	p.Kafka = profile.Kafka{Topic: c.OrdersTopic, DeadLetter: c.DeadLetterTopic, Group: c.ConsumerGroup}
	return &p
}

// TestBundledProfileIsVerified: the default profile's queries and templates are checked against
// the bundled server on every preflight, and agree with a purchase.
func TestBundledProfileIsVerified(t *testing.T) {
	tg := newTarget(t, checkouttest.Options{Quantity: 10, Shards: 2})
	tg.cfg.TokenSecret = string(checkouttest.Secret)
	if code, body := tg.c.Buy("u1", "hot", "k1"); code != 202 {
		t.Fatalf("purchase: %d %s", code, body)
	}
	waitPending(t, tg, 1)
	rep := tg.run(t)
	if !rep.Ready(false) || rep.Profile != "fsctl" {
		t.Fatalf("profile %q, failures %v", rep.Profile, failures(rep))
	}
	expectField(t, rep, "purchase", finding.Pass, "POST /api/v1/sales/"+tg.c.Sale.ID+"/items/hot/purchase")
	expectField(t, rep, "token", finding.Pass, "hs256 token for fsctl-profile-check")
	expectField(t, rep, "sql.items", finding.Pass, "1 item(s): hot")
	expectField(t, rep, "sql.perUserLimit", finding.Pass, "per-user limit 1")
	expectField(t, rep, "sql.item", finding.Pass, "item hot: quantity 10, sold 1")
	expectField(t, rep, "sql.live", finding.Pass, "item hot: 1 live orders")
	expectField(t, rep, "sql.paid", finding.Pass, "item hot: 0 paid orders")
	expectField(t, rep, "sql.shards", finding.Pass, "item hot: 2 shard(s)")
	expectField(t, rep, "sql.userOrders", finding.Pass, "item hot: 0 orders of fsctl-profile-check")
	expectField(t, rep, "sql.liveBuyers", finding.Pass, "item hot: 1 live buyers")
	// Without the secret a token cannot be minted: a warning naming the variable to set.
	tg.cfg.TokenSecret = ""
	t.Setenv("FSCTL_JWT_SECRET", "")
	r := expectField(t, tg.run(t), "token", finding.Warn, "no token")
	if !strings.Contains(r.Fix, "$FSCTL_JWT_SECRET") {
		t.Fatalf("fix %q does not name the variable", r.Fix)
	}
}

// TestForeignTargetReadyThenDrift: through a non-deep profile only the profile's checks run, the
// bundled-only groups are skips, and a counter one unit high is a failure with the numbers.
func TestForeignTargetReadyThenDrift(t *testing.T) {
	tg := newTarget(t, checkouttest.Options{Quantity: 10})
	tg.cfg.Profile = foreignCopy(tg.c)
	rep := tg.run(t)
	if !rep.Ready(false) || rep.Profile != "fsctl-as-foreign" {
		t.Fatalf("profile %q, failures %v", rep.Profile, failures(rep))
	}
	expect(t, rep, "migrations", finding.Skip, "fsctl serve only")
	expect(t, rep, "sale", finding.Skip, "the profile has no sale definition")
	expect(t, rep, "admission rate", finding.Skip, "not available for this target")
	expect(t, rep, "kill switches", finding.Skip, "not available for this target")
	expect(t, rep, "versions and sale view", finding.Skip, "not available for this target")
	expect(t, rep, "stock hot", finding.Pass, "redis 10 on 1 shard(s), expected 10 = quantity 10 − live orders 0")
	expect(t, rep, "hash slots hot", finding.Pass, "one slot")
	expect(t, rep, "orders topic", finding.Pass, tg.c.OrdersTopic)
	expect(t, rep, "consumer group", finding.Pass, "1 member(s)")
	expect(t, rep, "ready "+tg.c.Base, finding.Pass, "GET /healthz answered 200")
	expect(t, rep, "clock server", finding.Pass, "this machine is")
	for _, r := range rep.Results {
		if r.Check == "scripts" {
			t.Fatalf("the bundled script cache was checked on a foreign target: %+v", r)
		}
	}

	rdb := testenv.Redis(t)
	if err := rdb.Incr(context.Background(), stock.ItemKeys(tg.c.Sale.ID, "hot").Stock()).Err(); err != nil {
		t.Fatal(err)
	}
	rep = tg.run(t)
	r := expect(t, rep, "stock hot", finding.Fail, "redis holds 11, expected 10 (off by +1)")
	if rep.Ready(false) || r.Repair != "" || !strings.Contains(r.Fix, "the profile declares no fix for this") {
		t.Fatalf("drift: ready %v, %+v", rep.Ready(false), r)
	}

	// Without a declared order log the kafka group is a skip, not a failure.
	p := foreignCopy(tg.c)
	p.Kafka = profile.Kafka{}
	tg.cfg.Profile, tg.cfg.OrdersTopic, tg.cfg.DeadLetterTopic, tg.cfg.ConsumerGroup = p, "", "", ""
	expect(t, tg.run(t), "order log", finding.Skip, "the profile declares no order log")
}

// TestForeignMissingCounterIsRecounted: a missing counter fails; it is repaired only when the
// profile declares fix.stock: recount, and only for an unsharded item.
func TestForeignMissingCounterIsRecounted(t *testing.T) {
	tg := newTarget(t, checkouttest.Options{Quantity: 10})
	p := foreignCopy(tg.c)
	tg.cfg.Profile = p
	key := stock.ItemKeys(tg.c.Sale.ID, "hot").Stock()
	if err := testenv.Redis(t).Del(context.Background(), key).Err(); err != nil {
		t.Fatal(err)
	}
	tg.cfg.Fix = true
	rep := tg.run(t)
	r := expect(t, rep, "stock hot", finding.Fail, "no stock counter "+key)
	if len(rep.Fixed) != 0 || !strings.Contains(r.Fix, "the profile declares no fix for this") {
		t.Fatalf("repaired without fix.stock: %+v %+v", rep.Fixed, r)
	}
	p.Fix.Stock = profile.Recount
	rep = tg.run(t)
	if len(rep.Fixed) != 1 || rep.Fixed[0].Check != "stock hot" || rep.Fixed[0].Error != "" {
		t.Fatalf("fixed %+v, want the counter recounted", rep.Fixed)
	}
	expect(t, rep, "stock hot", finding.Pass, "redis 10 on 1 shard(s)")
	if !rep.Ready(false) {
		t.Fatalf("after the recount: %v", failures(rep))
	}
}

func TestForeignShardedItem(t *testing.T) {
	tg := newTarget(t, checkouttest.Options{Quantity: 9, Shards: 3})
	p := foreignCopy(tg.c)
	p.Fix.Stock = profile.Recount
	tg.cfg.Profile = p
	expect(t, tg.run(t), "stock hot", finding.Pass, "redis 9 on 3 shard(s), expected 9")
	key := stock.ShardKeys(tg.c.Sale.ID, "hot", 2, 3).Stock()
	if err := testenv.Redis(t).Del(context.Background(), key).Err(); err != nil {
		t.Fatal(err)
	}
	tg.cfg.Fix = true
	rep := tg.run(t)
	r := expect(t, rep, "stock hot", finding.Fail, "no stock counter "+key)
	if len(rep.Fixed) != 0 || !strings.Contains(r.Fix, "unsharded items only") {
		t.Fatalf("a sharded counter was recounted: %+v %+v", rep.Fixed, r)
	}
}

// TestProfileQueryTypo: a query that does not run is a failure naming the field, carrying
// PostgreSQL's own error.
func TestProfileQueryTypo(t *testing.T) {
	tg := newTarget(t, checkouttest.Options{Quantity: 3})
	p := foreignCopy(tg.c)
	p.SQL.Live = "SELECT count(*) FROM orderz WHERE sale_id = @sale AND item_id = @item"
	tg.cfg.Profile = p
	rep := tg.run(t)
	r := expectField(t, rep, "sql.live", finding.Fail, `item hot: query sql.live: ERROR: relation "orderz" does not exist`)
	if !strings.Contains(r.Fix, "correct sql.live in the profile") || rep.Ready(false) {
		t.Fatalf("fix %q", r.Fix)
	}
}

// expectField asserts the profile group's line of one field (an exact check: sql.item is not
// sql.items) whose detail has detail, with its status; a failure must say how to fix it.
func expectField(t *testing.T, rep preflight.Report, field string, want finding.Status, detail string) finding.Finding {
	t.Helper()
	for _, r := range rep.Results {
		if r.Group != "profile" || r.Check != field || !strings.Contains(r.Detail, detail) {
			continue
		}
		if r.Status != want || (want == finding.Fail && r.Fix == "") {
			t.Fatalf("%s: got %+v, want %s", field, r, want)
		}
		return r
	}
	t.Fatalf("no profile line %s with %q in %+v", field, detail, rep.Results)
	return finding.Finding{}
}

// TestProfileGroupIsProfileCheck: preflight's profile group asks what `fsctl profile check` asks,
// through the same pieces: its lines are the check's own (less the endpoints, keys and order log,
// which are preflight's other groups), line for line, a planted query error included.
func TestProfileGroupIsProfileCheck(t *testing.T) {
	tg := newTarget(t, checkouttest.Options{Quantity: 3, Shards: 2})
	p := foreignCopy(tg.c)
	p.SQL.Live = "SELECT count(*) FROM orderz WHERE sale_id = @sale AND item_id = @item"
	tg.cfg.Profile, tg.cfg.TokenSecret = p, string(checkouttest.Secret)
	var group []string
	for _, r := range tg.run(t).Results {
		if r.Group == "profile" {
			group = append(group, fmt.Sprintf("%s %s %q %q", r.Check, r.Status, r.Detail, r.Fix))
		}
	}
	ctx := context.Background()
	target, err := profile.Connect(ctx, p, tg.cfg.RedisURL, tg.cfg.PostgresURL)
	if err != nil {
		t.Fatal(err)
	}
	defer target.Close()
	var check []string
	for _, l := range target.Check(ctx, profile.CheckConfig{Sale: tg.c.Sale.ID, Base: tg.c.Base, Secret: tg.cfg.TokenSecret}).Lines {
		if !strings.HasPrefix(l.Check, "http.") && !strings.HasPrefix(l.Check, "redis.") && !strings.HasPrefix(l.Check, "kafka.") {
			check = append(check, fmt.Sprintf("%s %s %q %q", l.Check, l.Status, l.Detail, l.Fix))
		}
	}
	if !slices.Equal(group, check) {
		t.Fatalf("preflight's profile group:\n%s\nprofile check:\n%s", strings.Join(group, "\n"), strings.Join(check, "\n"))
	}
	if !slices.ContainsFunc(group, func(l string) bool {
		return strings.HasPrefix(l, `sql.live fail "item hot: query sql.live: ERROR: relation \"orderz\"`)
	}) {
		t.Fatalf("no failed sql.live line in\n%s", strings.Join(group, "\n"))
	}
}
