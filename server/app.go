package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/redis/go-redis/v9"
	"go.opentelemetry.io/otel/trace"
	"golang.org/x/sync/errgroup"

	"github.com/fsctl/fsctl/internal/checkout/auth"
	"github.com/fsctl/fsctl/internal/checkout/control"
	"github.com/fsctl/fsctl/internal/checkout/events"
	"github.com/fsctl/fsctl/internal/checkout/ingest"
	"github.com/fsctl/fsctl/internal/checkout/lifecycle"
	"github.com/fsctl/fsctl/internal/checkout/orders"
	"github.com/fsctl/fsctl/internal/checkout/payment"
	"github.com/fsctl/fsctl/internal/checkout/readmodel"
	"github.com/fsctl/fsctl/internal/checkout/reservation"
	"github.com/fsctl/fsctl/internal/checkout/room"
	"github.com/fsctl/fsctl/internal/checkout/stock"
	"github.com/fsctl/fsctl/internal/platform/kafkaconn"
)

// AppConfig is everything `fsctl serve` needs to run the checkout on real services.
type AppConfig struct {
	Server Config
	// StartWait is how long a start waits for each of Redis, PostgreSQL and Kafka while it does
	// not answer yet (a cluster recovering, a node or a broker restarting) before it gives up, so
	// an instance started during an outage (a pod scaled up, a crash restarted) comes up when the
	// store does instead of exiting; a wrong kind of address fails at once.
	StartWait   time.Duration
	RedisURL    string
	PostgresURL string
	Kafka       kafkaconn.Conn
	// OrdersTopic and DeadLetterTopic default to events.DefaultOrdersTopic / DefaultDeadLetterTopic.
	OrdersTopic, DeadLetterTopic string
	// Partitions is the orders topic's partition count when the server creates it.
	Partitions int
	// JWTSecret verifies buyers' HS256 tokens and keys the server's own signatures (admission
	// tokens, revealed purchase paths); with JWKS it does only the latter.
	JWTSecret []byte
	// JWKS, when set, verifies buyers' tokens against an identity provider's key set instead of
	// JWTSecret (auth.NewJWKSVerifier); /readyz reports "jwks" not ready while it holds no key.
	JWKS *auth.JWKSConfig
	// API and Consumer select the roles this process runs; both by default.
	API, Consumer bool
	// ConsumerGroup defaults to ingest's group id.
	ConsumerGroup string
	// ConsumerSession is the order consumer's group session timeout (ingest.DefaultSessionTimeout
	// when zero).
	ConsumerSession time.Duration
	// Migrate applies database migrations at start.
	Migrate bool
	// IdemTTL is how long a purchase's answer is kept under its Idempotency-Key
	// (stock.DefaultIdemTTL when zero); the records take Redis memory in proportion.
	IdemTTL time.Duration
	// PaymentURL is the payment provider's base URL; empty runs the bundled fake provider
	// in-process (for demos and tests — it charges nothing real).
	PaymentURL string
	// Breaker guards the payment provider.
	Breaker payment.BreakerConfig
	// Lifecycle tunes the payment saga and the background jobs (expiry, sweeper, claim resolver).
	Lifecycle lifecycle.Config
	// Workers runs the background jobs in this process (every instance may run them).
	Workers bool
	// SwitchesKey is the Redis key of the kill switches (control.Key when empty).
	SwitchesKey string
	// ControlPoll is how often the kill switches are re-read.
	ControlPoll time.Duration
	// RoomRedisURL is where the waiting rooms keep their state; empty means RedisURL. A separate
	// Redis keeps a queue of millions of waiters off the stock counters.
	RoomRedisURL string
	// RoomSecret signs admission tokens and proof-of-work challenges; empty derives one from
	// JWTSecret. Every instance needs the same one.
	RoomSecret []byte
	// RoomTick is how often this instance runs an admission round (100 ms when zero).
	RoomTick time.Duration
	// RedisBatch is the most hot-path commands one Redis pipeline carries (stock.Batch); 0 means
	// stock.DefaultBatchMax and a negative value sends every command alone.
	RedisBatch int
	// ReservationAddr, when set, is a reservation service (`fsctl serve --role reservation`) the
	// API reserves through over gRPC instead of running the stock scripts in-process.
	ReservationAddr string
	// ReservationSecurity is the TLS and token the client of ReservationAddr uses.
	ReservationSecurity reservation.Security
	// DebugAddr, when set, serves Go's profiler (pprof) on its own listener; see ServeDebug.
	DebugAddr string
	// Tracer traces the purchase path, the hand-off to the consumer, payments and the jobs; nil:
	// off (tracing.Setup builds it from the OTEL_* variables).
	Tracer trace.TracerProvider
	// ReadModel is where the sale page takes its stock numbers: ReadModelEvents or
	// ReadModelPoll; empty means poll.
	ReadModel string
	// StockTopic is the compacted topic of stock snapshots (events.DefaultStockTopic when empty).
	StockTopic string
}

// The sale page's read models (AppConfig.ReadModel).
const (
	// ReadModelEvents serves the stock numbers from the compacted stock topic (package
	// readmodel): the consumer and the jobs publish snapshots, every API instance tails them.
	ReadModelEvents = "events"
	// ReadModelPoll reads the live counters at most every Server.ReadModelTTL per instance.
	ReadModelPoll = "poll"
)

// App is the assembled checkout: HTTP API and order consumer over Redis, Kafka and PostgreSQL.
type App struct {
	cfg    AppConfig
	Server *Server
	Stock  *stock.Store
	Orders *orders.Store
	// Lifecycle is the payment saga and the background jobs.
	Lifecycle *lifecycle.Service
	// Switches are the operator's kill switches.
	Switches *control.Store
	// Room is the waiting rooms' shared state.
	Room     *room.Store
	consumer *ingest.Consumer
	pub, dlq *events.Publisher
	rdb      redis.UniversalClient
	roomRdb  redis.UniversalClient
	watcher  *control.Watcher
	fakePay  *http.Server
	// metricsAt yields the metrics listener's address once it listens (MetricsAddr).
	metricsAt chan net.Addr
	log       *slog.Logger
	// The event-fed read model (ReadModelEvents): the snapshot publisher of the consumer and the
	// jobs, and the API's view; nil when not used.
	stockPub  *events.Publisher
	snapshots *readmodel.Publisher
	view      *readmodel.View

	// reservations is the remote reservation service's client (ReservationAddr); nil: in-process.
	reservations *reservation.Client
	// stopJWKS ends the identity provider's key set refreshes (JWKS); nil without one.
	stopJWKS context.CancelFunc
}

// Run serves the roles until ctx ends. ready receives the API's address once it listens.
func (a *App) Run(ctx context.Context, ready func(net.Addr)) error {
	g, ctx := errgroup.WithContext(ctx)
	g.Go(func() error { a.watcher.Run(ctx); return nil })
	if a.cfg.DebugAddr != "" {
		g.Go(func() error { return ServeDebug(ctx, a.cfg.DebugAddr, a.log) })
	}
	if addr := a.cfg.Server.MetricsAddr; addr != "" {
		g.Go(func() error { return a.Server.ServeMetrics(ctx, addr, func(at net.Addr) { a.metricsAt <- at }) })
	}
	if a.cfg.Workers {
		a.log.Info("lifecycle jobs started", "expiry_every", a.cfg.Lifecycle.ExpiryInterval, "sweep_every", a.cfg.Lifecycle.SweepInterval)
		g.Go(func() error {
			if err := a.Lifecycle.Run(ctx); !errors.Is(err, context.Canceled) {
				return err
			}
			return nil
		})
	}
	if a.cfg.API {
		g.Go(func() error { a.Server.RunRoom(ctx, a.cfg.RoomTick); return nil })
		g.Go(func() error { return a.Server.Serve(ctx, ready) })
	}
	if a.view != nil {
		g.Go(func() error { _ = a.view.Run(ctx); return nil })
	}
	if a.snapshots != nil {
		g.Go(func() error { _ = a.snapshots.Run(ctx); return nil })
	}
	if a.consumer != nil {
		a.log.Info("order consumer started", "topic", a.cfg.OrdersTopic, "dead_letters", a.cfg.DeadLetterTopic)
		g.Go(func() error {
			err := a.consumer.Run(ctx)
			if errors.Is(err, context.Canceled) {
				return nil
			}
			return err
		})
	}
	return g.Wait()
}

// Start runs the roles in the background until ctx ends. It returns once the API listens (with
// its address; nil when the API role is off), and a channel that yields Run's result.
func (a *App) Start(ctx context.Context) (net.Addr, <-chan error, error) {
	addrc := make(chan net.Addr, 1)
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx, func(addr net.Addr) { addrc <- addr }) }()
	if !a.cfg.API {
		return nil, done, nil
	}
	select {
	case addr := <-addrc:
		return addr, done, nil
	case err := <-done:
		return nil, nil, fmt.Errorf("checkout stopped before listening: %w", err)
	}
}

// MetricsAddr waits until the metrics listener (Config.MetricsAddr) listens and returns its
// address; ctx bounds the wait.
func (a *App) MetricsAddr(ctx context.Context) (net.Addr, error) {
	select {
	case at := <-a.metricsAt:
		a.metricsAt <- at
		return at, nil
	case <-ctx.Done():
		return nil, fmt.Errorf("metrics listener: %w", ctx.Err())
	}
}

// Close releases every connection.
func (a *App) Close() {
	if a.stopJWKS != nil {
		a.stopJWKS()
	}
	if a.consumer != nil {
		_ = a.consumer.Close()
	}
	for _, p := range []*events.Publisher{a.pub, a.dlq, a.stockPub} {
		if p != nil {
			_ = p.Close()
		}
	}
	if a.Orders != nil {
		a.Orders.Close()
	}
	if a.fakePay != nil {
		_ = a.fakePay.Close()
	}
	if a.reservations != nil {
		_ = a.reservations.Close()
	}
	if a.roomRdb != nil && a.roomRdb != a.rdb {
		_ = a.roomRdb.Close()
	}
	if a.rdb != nil {
		_ = a.rdb.Close()
	}
}
