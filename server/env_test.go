package server_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"go.opentelemetry.io/otel/trace"

	"github.com/fsctl/fsctl/internal/checkout/auth"
	"github.com/fsctl/fsctl/internal/checkout/lifecycle"
	"github.com/fsctl/fsctl/internal/checkout/orders"
	"github.com/fsctl/fsctl/internal/checkout/payment"
	"github.com/fsctl/fsctl/internal/checkout/provision"
	"github.com/fsctl/fsctl/internal/checkout/stock"
	"github.com/fsctl/fsctl/internal/contract/sale"
	"github.com/fsctl/fsctl/internal/harness/stack"
	"github.com/fsctl/fsctl/internal/harness/testenv"
	"github.com/fsctl/fsctl/internal/platform/kafkaconn"
	"github.com/fsctl/fsctl/internal/proof/verify"
	"github.com/fsctl/fsctl/server"
	checkouttest "github.com/fsctl/fsctl/server/servertest"
)

var testSecret = []byte("server-test-secret-0123456789abcdef")

// env is one checkout running on the real services, with its own database, topics and sale.
type env struct {
	t        *testing.T
	app      *server.App
	base     string
	sale     sale.Sale
	pgURL    string
	topic    string
	dlq      string
	brokers  []string
	switches string
	opts     envOptions
	client   *http.Client
	remote   *remoteReservations
}

// envOptions shape a test checkout; zero values take the defaults of newEnv.
type envOptions struct {
	// Cluster runs the checkout on the local Redis Cluster.
	Cluster  bool
	Quantity int64
	Limit    int
	HoldTTL  time.Duration
	Shards   int
	// OpensAt and ClosesAt default to "opened a minute ago" and "never closes".
	OpensAt, ClosesAt time.Time
	WaitReplicas      int
	// PaymentURL empty runs the bundled fake provider in-process.
	PaymentURL string
	Breaker    payment.BreakerConfig
	// PaymentTimeout and ClaimTimeout override the lifecycle defaults when set.
	PaymentTimeout, ClaimTimeout time.Duration
	AdminToken                   string
	SoldOut                      server.SoldOutMode
	// ReadModelTTL of GET /sales/{sale}; zero in tests so every read is fresh.
	ReadModelTTL time.Duration
	// Workers runs the lifecycle jobs with fast test intervals.
	Workers bool
	// Room and RateLimits go into the sale; RoomRedisURL moves the room's state elsewhere.
	Room         sale.Room
	RateLimits   sale.RateLimits
	RoomRedisURL string
	// Reveal hides the sale's purchase route until the opening (reveal_test.go).
	Reveal sale.Reveal
	// PerSaleLimit and ExtraItems: a sale of several items ("hot" first) with a limit across them.
	PerSaleLimit int
	ExtraItems   []sale.Item
	// Tune changes the server's settings last (connection limits, timeouts).
	Tune func(*server.Config)
	// Tracer traces the checkout (nil: off).
	Tracer trace.TracerProvider
	// Remote runs a reservation service (package reservation, on a loopback port, over the env's
	// Redis) and the API reserves through it over gRPC: the split deployment.
	Remote bool
}

// newEnv starts the API and the order consumer on a fresh database and fresh topics, and opens
// a sale with one item of the given quantity.
func newEnv(t *testing.T, quantity int64, limit int) *env {
	t.Helper()
	return newEnvWith(t, envOptions{Quantity: quantity, Limit: limit})
}

func newEnvWith(t *testing.T, o envOptions) *env {
	t.Helper()
	testenv.Redis(t) // skip under -short, fail with a hint when the stack is down
	e := &env{t: t, pgURL: testenv.Postgres(t), topic: testenv.KafkaTopic(t, 3), dlq: testenv.KafkaTopic(t, 1),
		brokers: testenv.KafkaBrokers(t), switches: testenv.ID(t, "switches"), opts: o,
		client: &http.Client{Timeout: 10 * time.Second}}
	if o.HoldTTL == 0 {
		o.HoldTTL = time.Minute
	}
	if o.OpensAt.IsZero() {
		o.OpensAt = time.Now().Add(-time.Minute)
	}
	e.sale = sale.Sale{
		ID: testenv.ID(t, "sale"), OpensAt: o.OpensAt, ClosesAt: o.ClosesAt, PerUserLimit: o.Limit,
		HoldTTL: o.HoldTTL, WaitReplicas: o.WaitReplicas, Items: []sale.Item{{ID: "hot", Quantity: o.Quantity, Shards: o.Shards, PriceCents: 4999}},
		Room: o.Room, RateLimits: o.RateLimits, Reveal: o.Reveal, PerSaleLimit: o.PerSaleLimit,
	}
	e.sale.Items = append(e.sale.Items, o.ExtraItems...)
	e.sale.Normalize()
	e.app, e.base = e.start(true)
	if _, err := provision.Sale(context.Background(), e.app.Orders, e.app.Stock, e.sale, provision.Options{}); err != nil {
		t.Fatalf("provision: %v", err)
	}
	t.Cleanup(func() { _ = e.app.Stock.Reset(context.Background(), e.sale) })
	return e
}

// start runs one more checkout instance (API, consumer and, when asked, the lifecycle jobs) on
// the env's database, topics and Redis, and returns it with its base URL.
func (e *env) start(api bool) (*server.App, string) {
	t := e.t
	cfg := server.DefaultConfig()
	cfg.Addr = "127.0.0.1:0"
	cfg.ReadModelTTL = e.opts.ReadModelTTL
	cfg.AdminToken = e.opts.AdminToken
	cfg.SoldOutPoll = 20 * time.Millisecond
	if e.opts.SoldOut != "" {
		cfg.SoldOut = e.opts.SoldOut
	}
	if e.opts.Tune != nil {
		e.opts.Tune(&cfg)
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	if testing.Verbose() {
		log = slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelWarn}))
	}
	lc := lifecycle.DefaultConfig()
	lc.ExpiryInterval, lc.SweepInterval, lc.RecordWait = 50*time.Millisecond, 200*time.Millisecond, 5*time.Second
	lc.OrphanAge = time.Millisecond // in-flight orders get re-published too: a harmless duplicate
	if e.opts.PaymentTimeout > 0 {
		lc.PaymentTimeout = e.opts.PaymentTimeout
	}
	if e.opts.ClaimTimeout > 0 {
		lc.ClaimTimeout = e.opts.ClaimTimeout
	}
	return checkouttest.StartApp(t, server.AppConfig{
		Server: cfg, RedisURL: e.redisURL(), PostgresURL: e.pgURL, Kafka: kafkaconn.Conn{Brokers: e.brokers},
		OrdersTopic: e.topic, DeadLetterTopic: e.dlq, JWTSecret: testSecret, API: api, Consumer: true,
		ConsumerGroup: "g-" + e.topic, Migrate: true, PaymentURL: e.opts.PaymentURL, Breaker: e.opts.Breaker,
		Lifecycle: lc, Workers: e.opts.Workers, SwitchesKey: e.switches, ControlPoll: 20 * time.Millisecond,
		RoomRedisURL: e.opts.RoomRedisURL, RoomTick: 20 * time.Millisecond, Tracer: e.opts.Tracer,
		ReservationAddr: e.reservationAddr(),
	}, log)
}

// redisURL is the single node of the stack, or its Redis Cluster when the env asks for one.
func (e *env) redisURL() string {
	if e.opts.Cluster {
		testenv.RedisCluster(e.t)
		return stack.EndpointsFromEnv().RedisClusterURL
	}
	return stack.EndpointsFromEnv().RedisURL
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}

func (e *env) token(user string) string {
	tok, err := auth.Mint(testSecret, user, time.Now(), time.Hour)
	if err != nil {
		e.t.Fatal(err)
	}
	return tok
}

// do sends a request with an optional bearer token for user and optional headers, and returns the
// status and body.
func (e *env) do(method, path, user string, headers map[string]string, body io.Reader) (int, string) {
	e.t.Helper()
	return e.doAt(e.base, method, path, user, headers, body)
}

// doAt is do against another instance.
func (e *env) doAt(base, method, path, user string, headers map[string]string, body io.Reader) (int, string) {
	e.t.Helper()
	req, err := http.NewRequest(method, base+path, body)
	if err != nil {
		e.t.Fatal(err)
	}
	if user != "" {
		req.Header.Set("Authorization", "Bearer "+e.token(user))
	}
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := e.client.Do(req)
	if err != nil {
		e.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func (e *env) purchasePath() string {
	return "/api/v1/sales/" + e.sale.ID + "/items/hot/purchase"
}

func (e *env) buy(user, key string) (int, string) {
	e.t.Helper()
	return e.do(http.MethodPost, e.purchasePath(), user, map[string]string{"Idempotency-Key": key}, nil)
}

// counts waits until PostgreSQL holds want live orders of the item (or 30 s pass) and returns them.
func (e *env) counts(want int64) orders.ItemCounts {
	e.t.Helper()
	var c orders.ItemCounts
	_, err := verify.Settle(context.Background(), 30*time.Second, 50*time.Millisecond, func(ctx context.Context) ([]string, error) {
		counts, err := e.app.Orders.Counts(ctx, e.sale.ID)
		c = orders.ItemCounts{}
		for _, x := range counts {
			if x.ItemID == "hot" {
				c = x
			}
		}
		if err == nil && c.Pending+c.Paid < want {
			return []string{"waiting"}, nil
		}
		return nil, err
	})
	if err != nil {
		e.t.Fatal(err)
	}
	return c
}

// redisState returns the item's stock counter and live holds.
func (e *env) redisState() (stock, holds int64) {
	e.t.Helper()
	s, err := e.app.Stock.Snapshot(context.Background(), e.sale.ID, e.sale.Items)
	if err != nil {
		e.t.Fatal(err)
	}
	return s[0].Stock, s[0].Holds
}

func orderIDOf(t *testing.T, body string) uuid.UUID {
	t.Helper()
	i := strings.Index(body, `"orderId":"`)
	if i < 0 {
		t.Fatalf("no orderId in %s", body)
	}
	id, err := uuid.Parse(body[i+11 : i+11+36])
	if err != nil {
		t.Fatalf("orderId in %s: %v", body, err)
	}
	return id
}

// stores opens the real stores on a fresh database and provisions sl (normalized) on them, for
// tests and benchmarks that build a Server by hand; the sale's Redis keys go when tb ends.
func stores(tb testing.TB, sl sale.Sale) (*stock.Store, *orders.Store, sale.Sale) {
	tb.Helper()
	rdb := testenv.Redis(tb)
	pgURL := testenv.Postgres(tb)
	ctx := context.Background()
	if _, err := orders.Migrate(ctx, pgURL); err != nil {
		tb.Fatal(err)
	}
	db, err := orders.Open(ctx, pgURL)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(db.Close)
	st := stock.New(rdb)
	sl.Normalize()
	if _, err := provision.Sale(ctx, db, st, sl, provision.Options{}); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = st.Reset(context.Background(), sl) })
	return st, db, sl
}
