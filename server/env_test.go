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

	"github.com/fsctl/fsctl/auth"
	"github.com/fsctl/fsctl/demo"
	"github.com/fsctl/fsctl/orders"
	"github.com/fsctl/fsctl/provision"
	"github.com/fsctl/fsctl/sale"
	"github.com/fsctl/fsctl/server"
	"github.com/fsctl/fsctl/stack"
	"github.com/fsctl/fsctl/testenv"
)

var testSecret = []byte("server-test-secret-0123456789abcdef")

// env is one checkout running on the real services, with its own database, topics and sale.
type env struct {
	t       *testing.T
	app     *server.App
	base    string
	sale    sale.Sale
	topic   string
	dlq     string
	brokers []string
	client  *http.Client
}

// newEnv starts the API and the order consumer on a fresh database and fresh topics, and opens
// a sale with one item of the given quantity.
func newEnv(t *testing.T, quantity int64, limit int) *env {
	t.Helper()
	testenv.Redis(t) // skip under -short, fail with a hint when the stack is down
	pgURL := testenv.Postgres(t)
	topic := testenv.KafkaTopic(t, 3)
	dlq := testenv.KafkaTopic(t, 1)
	brokers := testenv.KafkaBrokers(t)
	ctx, cancel := context.WithCancel(context.Background())
	cfg := server.DefaultConfig()
	cfg.Addr = "127.0.0.1:0"
	cfg.ReadModelTTL = 0
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	if testing.Verbose() {
		log = slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelWarn}))
	}
	app, err := server.Open(ctx, server.AppConfig{
		Server: cfg, RedisURL: stack.EndpointsFromEnv().RedisURL, PostgresURL: pgURL, Brokers: brokers,
		OrdersTopic: topic, DeadLetterTopic: dlq, JWTSecret: testSecret, API: true, Consumer: true,
		ConsumerGroup: "g-" + topic, Migrate: true,
	}, log)
	if err != nil {
		cancel()
		t.Fatalf("open app: %v", err)
	}
	sl := sale.Sale{
		ID: testenv.ID(t, "sale"), OpensAt: time.Now().Add(-time.Minute), PerUserLimit: limit,
		HoldTTL: time.Minute, Items: []sale.Item{{ID: "hot", Quantity: quantity}},
	}
	sl.Normalize()
	if _, err := provision.Sale(ctx, app.Orders, app.Stock, sl, provision.Options{}); err != nil {
		cancel()
		app.Close()
		t.Fatalf("provision: %v", err)
	}
	addr, done, err := app.Start(ctx)
	if err != nil {
		cancel()
		app.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = app.Stock.Reset(context.Background(), sl)
		cancel()
		<-done
		app.Close()
	})
	return &env{t: t, app: app, base: "http://" + addr.String(), sale: sl, topic: topic, dlq: dlq, brokers: brokers,
		client: &http.Client{Timeout: 10 * time.Second}}
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
	req, err := http.NewRequest(method, e.base+path, body)
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
	c, err := demo.WaitPersisted(context.Background(), e.app.Orders, e.sale.ID, "hot", want, 30*time.Second)
	if err != nil {
		e.t.Fatal(err)
	}
	return c
}

// redisState returns the item's stock counter and live holds.
func (e *env) redisState() (stock, holds int64) {
	e.t.Helper()
	s, err := e.app.Stock.Snapshot(context.Background(), e.sale.ID, []string{"hot"})
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
