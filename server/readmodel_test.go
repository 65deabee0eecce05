package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/fsctl/fsctl/internal/checkout/events"
	"github.com/fsctl/fsctl/internal/checkout/lifecycle"
	"github.com/fsctl/fsctl/internal/checkout/provision"
	"github.com/fsctl/fsctl/internal/checkout/stock"
	"github.com/fsctl/fsctl/internal/contract/sale"
	"github.com/fsctl/fsctl/internal/harness/testenv"
	"github.com/fsctl/fsctl/internal/harness/testenv/eventually"
	"github.com/fsctl/fsctl/internal/platform/kafkaconn"
	"github.com/fsctl/fsctl/server"
	checkouttest "github.com/fsctl/fsctl/server/servertest"
)

// eventsEnv is an env whose every instance serves the sale page from the stock topic.
type eventsEnv struct {
	*env
	stockTopic string
	bases      []string
}

// newEventsEnv starts n instances (API, consumer and the lifecycle jobs each) with --read-model
// events and a ReadModelTTL of an hour: a page that follows Redis can only have learnt it from the
// stock topic.
func newEventsEnv(t *testing.T, quantity int64, holdTTL time.Duration, n int) *eventsEnv {
	t.Helper()
	testenv.Redis(t)
	o := envOptions{Quantity: quantity, Limit: 1, HoldTTL: holdTTL, ReadModelTTL: time.Hour, Workers: true}
	e := &eventsEnv{env: &env{t: t, pgURL: testenv.Postgres(t), topic: testenv.KafkaTopic(t, 3), dlq: testenv.KafkaTopic(t, 1),
		brokers: testenv.KafkaBrokers(t), switches: testenv.ID(t, "switches"), opts: o,
		client: &http.Client{Timeout: 10 * time.Second}}, stockTopic: testenv.KafkaTopic(t, 1)}
	e.sale = sale.Sale{ID: testenv.ID(t, "sale"), OpensAt: time.Now().Add(-time.Minute), PerUserLimit: 1, HoldTTL: holdTTL,
		Items: []sale.Item{{ID: "hot", Quantity: quantity, PriceCents: 4999}}}
	e.sale.Normalize()
	for i := range n {
		app, base := e.startEvents(server.ReadModelEvents)
		if i == 0 {
			e.app, e.base = app, base
			if _, err := provision.Sale(context.Background(), e.app.Orders, e.app.Stock, e.sale, provision.Options{}); err != nil {
				t.Fatalf("provision: %v", err)
			}
			t.Cleanup(func() { _ = e.app.Stock.Reset(context.Background(), e.sale) })
		}
		e.bases = append(e.bases, base)
	}
	return e
}

// startEvents runs one more instance with the given read model.
func (e *eventsEnv) startEvents(readModel string) (*server.App, string) {
	cfg := server.DefaultConfig()
	cfg.Addr, cfg.ReadModelTTL = "127.0.0.1:0", e.opts.ReadModelTTL
	lc := lifecycle.DefaultConfig()
	lc.ExpiryInterval, lc.SweepInterval, lc.RecordWait = 50*time.Millisecond, 200*time.Millisecond, 5*time.Second
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	if testing.Verbose() {
		log = slog.New(slog.NewTextHandler(testWriter{e.t}, &slog.HandlerOptions{Level: slog.LevelWarn}))
	}
	return checkouttest.StartApp(e.t, server.AppConfig{
		Server: cfg, RedisURL: e.redisURL(), PostgresURL: e.pgURL, Kafka: kafkaconn.Conn{Brokers: e.brokers},
		OrdersTopic: e.topic, DeadLetterTopic: e.dlq, JWTSecret: testSecret, API: true, Consumer: true,
		ConsumerGroup: "g-" + e.topic, Migrate: true, Lifecycle: lc, Workers: e.opts.Workers, SwitchesKey: e.switches,
		ControlPoll: 20 * time.Millisecond, RoomTick: 20 * time.Millisecond,
		ReadModel: readModel, StockTopic: e.stockTopic,
	}, log)
}

type stockPage struct {
	Items []struct {
		ID        string `json:"id"`
		Remaining int64  `json:"remaining"`
	} `json:"items"`
	StockAsOf   time.Time `json:"stockAsOf"`
	StockSource string    `json:"stockSource"`
}

// page reads the sale page of one instance.
func (e *eventsEnv) page(base string) stockPage {
	e.t.Helper()
	code, body := e.doAt(base, http.MethodGet, "/api/v1/sales/"+e.sale.ID, "", nil, nil)
	if code != http.StatusOK {
		e.t.Fatalf("GET sale: %d %s", code, body)
	}
	var p stockPage
	if err := json.Unmarshal([]byte(body), &p); err != nil || len(p.Items) != 1 {
		e.t.Fatalf("sale page %s: %v", body, err)
	}
	return p
}

// liveRemaining is Redis's own count of the item's units on sale.
func (e *eventsEnv) liveRemaining() int64 {
	e.t.Helper()
	n, err := e.app.Stock.Remaining(context.Background(), []stock.ItemRef{{SaleID: e.sale.ID, ItemID: "hot"}})
	if err != nil {
		e.t.Fatal(err)
	}
	return n[0]
}

// converge waits until every instance's page shows want from source, within bound.
func (e *eventsEnv) converge(bases []string, want int64, source string, bound time.Duration) {
	e.t.Helper()
	// One bound for all of them, taken in turn: an instance that showed want is not asked again.
	next := 0
	eventually.OK(e.t, bound, func() error {
		for ; next < len(bases); next++ {
			b := bases[next]
			if p := e.page(b); p.Items[0].Remaining != want || p.StockSource != source {
				return fmt.Errorf("%s shows %d from %q, want %d from %q", b, p.Items[0].Remaining, p.StockSource, want, source)
			}
		}
		return nil
	})
}

// convergeBound is how long a change may take to reach every page: the consumer's batch, the
// publisher's flush, the topic and the view's fetch wait, with room for a busy 2-core machine.
const convergeBound = 5 * time.Second

// TestReadModelEventsFollowPurchasesAndReleases: after purchases, a cancel and expiries, every
// instance's page converges to Redis's real remaining stock, from the stock topic (the pages
// would not re-read Redis for an hour).
func TestReadModelEventsFollowPurchasesAndReleases(t *testing.T) {
	e := newEventsEnv(t, 10, 3*time.Second, 3)
	e.converge(e.bases, 10, "events", convergeBound)

	for i := range 4 {
		user := "buyer-" + string(rune('a'+i))
		id := e.mustBuy(user, "k1")
		if i == 0 {
			e.waitStatus(id, "PENDING")
			if code, body := e.cancel(user, id); code != http.StatusOK {
				t.Fatalf("cancel: %d %s", code, body)
			}
			if got := e.liveRemaining(); got != 10 {
				t.Fatalf("Redis shows %d after a purchase and its cancel, want 10", got)
			}
			e.converge(e.bases, 10, "events", convergeBound)
		}
	}
	if got := e.liveRemaining(); got != 7 {
		t.Fatalf("Redis shows %d after 3 live purchases, want 7", got)
	}
	e.converge(e.bases, 7, "events", convergeBound)

	// The holds expire (3 s) and the expiry job returns the units: every page follows.
	e.converge(e.bases, 10, "events", 3*time.Second+convergeBound)
	if got := e.liveRemaining(); got != 10 {
		t.Fatalf("Redis shows %d after the holds expired, want 10", got)
	}
}

// TestReadModelFreshInstanceReadsTheTopic: an instance started later serves the numbers of the
// compacted topic, not the live counters (moved here behind the topic's back).
func TestReadModelFreshInstanceReadsTheTopic(t *testing.T) {
	e := newEventsEnv(t, 10, time.Minute, 1)
	e.mustBuy("buyer-a", "k1")
	e.mustBuy("buyer-b", "k1")
	e.converge(e.bases, 8, "events", convergeBound)
	bump(t, e, 100)
	_, fresh := e.startEvents(server.ReadModelEvents)
	e.converge([]string{fresh}, 8, "events", convergeBound)
}

// TestReadModelFallsBackWhenTheTopicIsGone: while the stock topic cannot be read the page reads
// Redis every ReadModelTTL again, and says so.
func TestReadModelFallsBackWhenTheTopicIsGone(t *testing.T) {
	e := newEventsEnv(t, 10, time.Minute, 1)
	e.opts.ReadModelTTL = 0
	_, base := e.startEvents(server.ReadModelEvents)
	bases := []string{base}
	e.mustBuy("buyer-a", "k1")
	e.converge(bases, 9, "events", convergeBound)
	bump(t, e, -5) // no snapshot says so: the live page keeps 9
	time.Sleep(500 * time.Millisecond)
	if p := e.page(base); p.Items[0].Remaining != 9 || p.StockSource != "events" {
		t.Fatalf("page shows %d from %q, want the topic's 9", p.Items[0].Remaining, p.StockSource)
	}

	c := &kafka.Client{Addr: kafka.TCP(e.brokers...), Timeout: 10 * time.Second}
	if _, err := c.DeleteTopics(context.Background(), &kafka.DeleteTopicsRequest{Topics: []string{e.stockTopic}}); err != nil {
		t.Fatal(err)
	}
	e.converge(bases, 4, "poll-fallback", convergeBound)
	// Back for testenv's cleanup, which deletes it.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := events.EnsureCompactedTopic(ctx, kafkaconn.Conn{Brokers: e.brokers}, e.stockTopic, 1); err != nil {
		t.Fatal(err)
	}
}

// bump moves the item's Redis counter by delta without telling anyone.
func bump(t *testing.T, e *eventsEnv, delta int64) {
	t.Helper()
	if err := testenv.Redis(t).IncrBy(context.Background(), stock.ShardKeys(e.sale.ID, "hot", 0, 0).Stock(), delta).Err(); err != nil {
		t.Fatal(err)
	}
}
