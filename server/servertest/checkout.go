// Package checkout starts the bundled checkout server in-process on the real local stack, with
// its own database, topics, kill-switch key and sale, for the integration tests of the operator
// commands (blast, preflight, warroom, reconcile) that need a live target.
package checkout

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/fsctl/fsctl/internal/checkout/auth"
	"github.com/fsctl/fsctl/internal/checkout/lifecycle"
	"github.com/fsctl/fsctl/internal/checkout/provision"
	"github.com/fsctl/fsctl/internal/contract/sale"
	"github.com/fsctl/fsctl/internal/harness/stack"
	"github.com/fsctl/fsctl/internal/harness/testenv"
	"github.com/fsctl/fsctl/internal/platform/kafkaconn"
	"github.com/fsctl/fsctl/server"
)

// Secret signs the test buyers' tokens.
var Secret = []byte("checkout-test-secret-0123456789abcdef")

// AdminToken is the operator token of every test checkout.
const AdminToken = "checkout-test-admin-token"

// Options shape the sale and the server. Zero values give one item "hot" of Quantity units,
// opened a minute ago, limit 1, a 10-minute hold, and no background jobs.
type Options struct {
	Quantity int64
	Limit    int
	Shards   int
	HoldTTL  time.Duration
	OpensAt  time.Time
	// Sale, when not nil, is provisioned instead of the one built from the fields above (its ID
	// is replaced by a unique one when empty).
	Sale *sale.Sale
	// Workers runs expiry, the sweeper and the claim resolver with fast test intervals.
	Workers bool
	// NoProvision starts the server without creating the sale.
	NoProvision bool
	// Cluster runs the checkout on the local Redis Cluster instead of the single node.
	Cluster bool
	// RedisURL, when set, is the Redis (or Redis Cluster) the checkout uses instead of the stack's.
	RedisURL string
	// Kafka, when set, are the brokers of a replicated Kafka the checkout publishes to instead of
	// the stack's single broker; its topics are replicated three ways, min.insync.replicas 2.
	Kafka []string
	// JWKS, when set, verifies buyers' tokens against an identity provider's key set instead of
	// Secret (fsctl serve --jwks-url).
	JWKS *auth.JWKSConfig
	// Tune, when set, changes the server's configuration before it starts (its deadlines).
	Tune func(*server.Config)
}

// Checkout is one running test checkout.
type Checkout struct {
	Base            string // http://127.0.0.1:port
	App             *server.App
	RedisURL        string
	Sale            sale.Sale
	PostgresURL     string
	Brokers         []string
	OrdersTopic     string
	DeadLetterTopic string
	ConsumerGroup   string
	SwitchesKey     string
	t               testing.TB
}

// Start runs the API and the order consumer in-process and provisions the sale; everything is
// stopped and the sale's Redis keys removed when the test ends.
func Start(t testing.TB, o Options) *Checkout {
	t.Helper()
	testenv.Redis(t) // skip under -short, fail with a hint when the stack is down
	redisURL := stack.EndpointsFromEnv().RedisURL
	if o.Cluster {
		testenv.RedisCluster(t)
		redisURL = stack.EndpointsFromEnv().RedisClusterURL
	}
	if o.RedisURL != "" {
		redisURL = o.RedisURL
	}
	brokers := o.Kafka
	if len(brokers) == 0 {
		brokers = testenv.KafkaBrokers(t)
	}
	topic := testenv.KafkaTopicOn(t, brokers, 3)
	c := &Checkout{
		RedisURL:    redisURL,
		PostgresURL: testenv.Postgres(t), Brokers: brokers, OrdersTopic: topic,
		DeadLetterTopic: testenv.KafkaTopicOn(t, brokers, 1), ConsumerGroup: "g-" + topic,
		SwitchesKey: testenv.ID(t, "switches"), t: t,
	}
	cfg := server.DefaultConfig()
	cfg.Addr = "127.0.0.1:0"
	cfg.ReadModelTTL = 0
	cfg.AdminToken = AdminToken
	cfg.SoldOutPoll = 20 * time.Millisecond
	if o.Tune != nil {
		o.Tune(&cfg)
	}
	lc := lifecycle.DefaultConfig()
	lc.ExpiryInterval, lc.SweepInterval = 50*time.Millisecond, 200*time.Millisecond
	app, base := StartApp(t, server.AppConfig{
		Server: cfg, RedisURL: c.RedisURL, PostgresURL: c.PostgresURL,
		Kafka: kafkaconn.Conn{Brokers: c.Brokers}, OrdersTopic: c.OrdersTopic, DeadLetterTopic: c.DeadLetterTopic,
		JWTSecret: Secret, API: true, Consumer: true, ConsumerGroup: c.ConsumerGroup, Migrate: true,
		Lifecycle: lc, Workers: o.Workers, SwitchesKey: c.SwitchesKey, ControlPoll: 20 * time.Millisecond,
		RoomTick: 20 * time.Millisecond, JWKS: o.JWKS,
	}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	c.App, c.Base = app, base
	c.Sale = buildSale(t, o)
	if o.NoProvision {
		return c
	}
	if _, err := provision.Sale(context.Background(), app.Orders, app.Stock, c.Sale, provision.Options{}); err != nil {
		t.Fatalf("provision sale %s: %v", c.Sale.ID, err)
	}
	t.Cleanup(func() { _ = app.Stock.Reset(context.Background(), c.Sale) })
	return c
}

// StartApp opens and starts one checkout with cfg, stopped and closed when the test ends, and
// returns it with its base URL (empty when it runs no API).
func StartApp(t testing.TB, cfg server.AppConfig, log *slog.Logger) (*server.App, string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	app, err := server.Open(ctx, cfg, log)
	if err != nil {
		cancel()
		t.Fatalf("open checkout: %v", err)
	}
	addr, done, err := app.Start(ctx)
	if err != nil {
		cancel()
		app.Close()
		t.Fatalf("start checkout: %v", err)
	}
	t.Cleanup(func() {
		cancel()
		<-done
		app.Close()
	})
	if addr == nil {
		return app, ""
	}
	return app, "http://" + addr.String()
}

func buildSale(t testing.TB, o Options) sale.Sale {
	if o.Sale != nil {
		sl := *o.Sale
		if sl.ID == "" {
			sl.ID = testenv.ID(t, "sale")
		}
		sl.Normalize()
		return sl
	}
	if o.Limit == 0 {
		o.Limit = 1
	}
	if o.HoldTTL == 0 {
		o.HoldTTL = 10 * time.Minute
	}
	if o.OpensAt.IsZero() {
		o.OpensAt = time.Now().Add(-time.Minute)
	}
	sl := sale.Sale{ID: testenv.ID(t, "sale"), OpensAt: o.OpensAt, PerUserLimit: o.Limit, HoldTTL: o.HoldTTL,
		Items: []sale.Item{{ID: "hot", Quantity: o.Quantity, Shards: o.Shards, PriceCents: 4999}}}
	sl.Normalize()
	return sl
}

// Token mints a buyer's bearer token.
func (c *Checkout) Token(user string) string {
	c.t.Helper()
	tok, err := auth.Mint(Secret, user, time.Now(), time.Hour)
	if err != nil {
		c.t.Fatalf("mint token: %v", err)
	}
	return tok
}

// Buy sends one purchase of item for user with the given idempotency key and returns the status
// and body.
func (c *Checkout) Buy(user, item, key string) (int, string) {
	c.t.Helper()
	req, err := http.NewRequest(http.MethodPost, c.Base+"/api/v1/sales/"+c.Sale.ID+"/items/"+item+"/purchase", nil)
	if err != nil {
		c.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+c.Token(user))
	req.Header.Set("Idempotency-Key", key)
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
	if err != nil {
		c.t.Fatalf("purchase: %v", err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, strings.TrimSpace(string(b))
}
