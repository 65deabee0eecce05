package profile_test

import (
	"context"
	"strings"
	"testing"

	"github.com/fsctl/fsctl/examples/articleshop/articletest"
	"github.com/fsctl/fsctl/internal/checkout/stock"
	"github.com/fsctl/fsctl/internal/contract/finding"
	"github.com/fsctl/fsctl/internal/harness/stack"
	"github.com/fsctl/fsctl/internal/platform/kafkaconn"
	"github.com/fsctl/fsctl/internal/target/profile"
	checkouttest "github.com/fsctl/fsctl/server/servertest"
)

func connect(t *testing.T, p *profile.Profile, redisURL, pgURL string) *profile.Target {
	t.Helper()
	tg, err := profile.Connect(context.Background(), p, redisURL, pgURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(tg.Close)
	return tg
}

func lines(r profile.CheckReport, status finding.Status) []string {
	var out []string
	for _, l := range r.Lines {
		if l.Status == status {
			out = append(out, l.Check+": "+l.Detail)
		}
	}
	return out
}

func TestCheckArticleTarget(t *testing.T) {
	t.Parallel()
	s := articletest.Start(t, 3, 2)
	s.Buy("ann", s.Items[0])
	s.WaitOrders(s.Items[0], 1)
	tg := connect(t, s.Profile, s.RedisURL, s.PostgresURL)
	rep := tg.Check(context.Background(), profile.CheckConfig{Sale: s.Sale, Base: s.Base, Kafka: kafkaconn.Conn{Brokers: s.Brokers}})
	if rep.Failed() {
		t.Fatalf("the shipped profile does not fit its shop: %v", lines(rep, finding.Fail))
	}
	for _, want := range []string{"token: rs256 token", "purchase: POST /api/flash-sales/items/", "http.health: GET",
		"sql.items: 2 item(s)", "sql.item: item " + s.Items[0] + ": quantity 3, sold 1", "sql.live: item " + s.Items[0] + ": 1 live orders",
		"redis.stock: {item:" + s.Items[1] + "}:stock = 2", "redis.buyers: {item:" + s.Items[0] + "}:buyers is a set", "kafka.group: " + s.Group} {
		if !strings.Contains(strings.Join(lines(rep, finding.Pass), "\n"), want) {
			t.Errorf("no ok line %q in\n%s", want, strings.Join(lines(rep, finding.Pass), "\n"))
		}
	}

	// A typo in a query, a key template naming keys that do not exist, a dead endpoint: each
	// fails with the field, and the query's line carries PostgreSQL's own error.
	bad := *s.Profile
	bad.SQL.Live = "SELECT count(*) FROM flash_sale_orderz WHERE item_id = @item::bigint"
	bad.Redis.Stock = "${tag}:stok"
	bad.HTTP.Health = "/health"
	rep = connect(t, &bad, s.RedisURL, s.PostgresURL).Check(context.Background(), profile.CheckConfig{Sale: s.Sale, Base: s.Base})
	failed := strings.Join(lines(rep, finding.Fail), "\n")
	for _, want := range []string{`sql.live: item ` + s.Items[0] + `: query sql.live: ERROR: relation "flash_sale_orderz" does not exist (SQLSTATE 42P01)`,
		"redis.stock: item " + s.Items[0] + " shard 0: {item:" + s.Items[0] + "}:stok does not exist", "http.health: GET " + s.Base + "/health answered 404"} {
		if !strings.Contains(failed, want) {
			t.Errorf("no failed line %q in\n%s", want, failed)
		}
	}
	// The live buyers are not judged against a count the failed sql.live never returned.
	if warned := strings.Join(lines(rep, finding.Warn), "\n"); strings.Contains(warned, "sql.liveBuyers") {
		t.Errorf("a failed sql.live makes sql.liveBuyers look wrong:\n%s", warned)
	}
}

func TestCheckBundledTarget(t *testing.T) {
	t.Parallel()
	c := checkouttest.Start(t, checkouttest.Options{Quantity: 8, Shards: 3})
	if st, body := c.Buy("bob", "hot", "k1"); st != 202 {
		t.Fatalf("purchase: %d %s", st, body)
	}
	p := profile.Default()
	p.Kafka.Topic, p.Kafka.DeadLetter, p.Kafka.Group = c.OrdersTopic, c.DeadLetterTopic, c.ConsumerGroup
	rep := connect(t, p, stack.EndpointsFromEnv().RedisURL, c.PostgresURL).Check(context.Background(),
		profile.CheckConfig{Sale: c.Sale.ID, Base: c.Base, Secret: string(checkouttest.Secret), Kafka: kafkaconn.Conn{Brokers: c.Brokers}})
	if rep.Failed() {
		t.Fatalf("the bundled profile does not fit the bundled server: %v", lines(rep, finding.Fail))
	}
	ok := strings.Join(lines(rep, finding.Pass), "\n")
	for _, want := range []string{"sql.shards: item hot: 3 shard(s)", stock.ShardKeys(c.Sale.ID, "hot", 2, 3).Stock(), "http.metrics: GET", "sql.perUserLimit: per-user limit 1"} {
		if !strings.Contains(ok, want) {
			t.Errorf("no ok line %q in\n%s", want, ok)
		}
	}

	// A sale whose limit lets nobody buy does not fit, whatever the rest says.
	p.SQL.PerUserLimit = "SELECT 0 WHERE @sale::text <> ''"
	rep = connect(t, p, stack.EndpointsFromEnv().RedisURL, c.PostgresURL).Check(context.Background(),
		profile.CheckConfig{Sale: c.Sale.ID, Secret: string(checkouttest.Secret)})
	if failed := lines(rep, finding.Fail); len(failed) != 1 || failed[0] != "sql.perUserLimit: sql.perUserLimit returned 0: want at least 1" {
		t.Fatalf("a limit of 0: %v", failed)
	}
}
