package drill

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/fsctl/fsctl/examples/articleshop/articletest"
	"github.com/fsctl/fsctl/internal/harness/testenv"
	"github.com/fsctl/fsctl/internal/platform/kafkaconn"
	"github.com/fsctl/fsctl/internal/target/profile"
	checkouttest "github.com/fsctl/fsctl/server/servertest"
)

// run drills and logs the text report, failing the test when the drill could not run.
func run(t *testing.T, cfg Config) *Report {
	t.Helper()
	var progress bytes.Buffer
	cfg.Progress = &progress
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	rep, err := Run(ctx, cfg)
	t.Log("\n" + progress.String())
	if err != nil {
		t.Fatalf("drill: %v", err)
	}
	var text bytes.Buffer
	if err := rep.Render(&text); err != nil {
		t.Fatal(err)
	}
	t.Log("\n" + text.String())
	return rep
}

func reserved(rep *Report) int64 {
	var n int64
	for _, it := range rep.Items {
		n += it.Reserved
	}
	return n
}

// TestDrillBundled drills fsctl serve through its own (deep) profile, on one Redis node and on the
// local Redis Cluster: the burst sells the stock exactly, the sale settles, blast's state check
// and the order-by-order reconcile read every master and find nothing.
func TestDrillBundled(t *testing.T) {
	t.Parallel()
	for name, cluster := range map[string]bool{"one node": false, "cluster": true} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			testDrillBundled(t, cluster)
		})
	}
}

func testDrillBundled(t *testing.T, cluster bool) {
	c := checkouttest.Start(t, checkouttest.Options{Quantity: 100, Shards: 2, Cluster: cluster})
	p := profile.Default()
	p.Kafka.Topic, p.Kafka.DeadLetter, p.Kafka.Group = c.OrdersTopic, c.DeadLetterTopic, c.ConsumerGroup
	rep := run(t, Config{Profile: p, Target: c.Base, Sale: c.Sale.ID, RedisURL: c.RedisURL,
		PostgresURL: c.PostgresURL, Kafka: kafkaconn.Conn{Brokers: c.Brokers}, Secret: string(checkouttest.Secret), Buyers: 400})
	if !rep.Passed {
		t.Fatalf("drill failed: %v", rep.Failures)
	}
	if n := reserved(rep); n != 100 {
		t.Fatalf("%d reserved, want the stock of 100", n)
	}
	if rep.Reconcile == nil || !rep.Reconcile.OK() || !rep.Reconcile.OrderByOrder {
		t.Fatalf("want the deep reconcile, OK: %+v", rep.Reconcile)
	}
	if len(rep.Phases) != 5 || rep.Items[0].Live != 100 || rep.Items[0].RedisLeft != 0 {
		t.Fatalf("phases %d, item %+v", len(rep.Phases), rep.Items[0])
	}
}

// TestDrillArticle drills the Spring-article shop through its shipped profile only: both items
// sell out exactly, its consumer writes every order and the profile's reconcile agrees.
func TestDrillArticle(t *testing.T) {
	t.Parallel()
	s := articletest.Start(t, 60, 40)
	rep := run(t, Config{Profile: s.Profile, Target: s.Base, Sale: s.Sale, RedisURL: s.RedisURL,
		PostgresURL: s.PostgresURL, Kafka: kafkaconn.Conn{Brokers: s.Brokers}, Buyers: 300})
	if !rep.Passed {
		t.Fatalf("drill failed: %v", rep.Failures)
	}
	if n := reserved(rep); n != 100 {
		t.Fatalf("%d reserved, want the stocks' 60+40", n)
	}
	if len(rep.Items) != 2 || rep.Reconcile.Profile != "spring-article" || !rep.Reconcile.OK() {
		t.Fatalf("items %+v, reconcile %+v", rep.Items, rep.Reconcile)
	}
	var js bytes.Buffer
	if err := rep.WriteJSON(&js); err != nil || !strings.Contains(js.String(), `"passed": true`) {
		t.Fatalf("json (%v): %s", err, js.String())
	}
}

// TestDrillOnASaleUnderWay drills an item that already sold some units: the sale has settled
// when the live orders are those of before plus the new RESERVED answers.
func TestDrillOnASaleUnderWay(t *testing.T) {
	t.Parallel()
	s := articletest.Start(t, 30)
	for _, u := range []string{"early-1", "early-2", "early-3"} {
		if st, body := s.Buy(u, s.Items[0]); st != 202 {
			t.Fatalf("purchase of %s: %d %s", u, st, body)
		}
	}
	s.WaitOrders(s.Items[0], 3)
	rep := run(t, Config{Profile: s.Profile, Target: s.Base, Sale: s.Sale, RedisURL: s.RedisURL,
		PostgresURL: s.PostgresURL, Kafka: kafkaconn.Conn{Brokers: s.Brokers}, Buyers: 60, Settle: 20 * time.Second})
	if !rep.Passed || len(rep.Items) != 1 {
		t.Fatalf("drill failed: %v", rep.Failures)
	}
	if it := rep.Items[0]; it.LiveBefore != 3 || it.Reserved != 27 || it.Live != 30 || it.RedisLeft != 0 {
		t.Fatalf("item %+v: want 3 live before, 27 reserved, 30 live, 0 left", it)
	}
}

// TestDrillArticleOversold plants five units too many in one item's Redis stock before the
// burst: the shop promises them, its database refuses the orders, and the drill fails naming
// the item.
func TestDrillArticleOversold(t *testing.T) {
	t.Parallel()
	s := articletest.Start(t, 30, 20)
	bad := s.Items[0]
	key := s.Profile.Keys(s.Sale, bad, 1)[0].Stock
	if err := testenv.Redis(t).IncrBy(context.Background(), key, 5).Err(); err != nil {
		t.Fatal(err)
	}
	rep := run(t, Config{Profile: s.Profile, Target: s.Base, Sale: s.Sale, RedisURL: s.RedisURL,
		PostgresURL: s.PostgresURL, Kafka: kafkaconn.Conn{Brokers: s.Brokers}, Buyers: 200, Settle: 5 * time.Second})
	if rep.Passed {
		t.Fatal("the drill passed with five units oversold")
	}
	failures := strings.Join(rep.Failures, "\n")
	if !strings.Contains(failures, bad) || strings.Contains(failures, s.Items[1]) {
		t.Fatalf("failures should name item %s and only it:\n%s", bad, failures)
	}
	for _, it := range rep.Items {
		if it.Item == bad && (it.Reserved != 35 || it.Live > 30) {
			t.Fatalf("item %+v: want 35 RESERVED, at most 30 live orders", it)
		}
	}
	var text bytes.Buffer
	_ = rep.Render(&text)
	if !strings.Contains(text.String(), "DRILL FAILED: ") {
		t.Fatalf("text report:\n%s", text.String())
	}
}
