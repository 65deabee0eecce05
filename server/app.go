package server

import (
	"cmp"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/redis/go-redis/v9"
	"go.opentelemetry.io/otel/trace"
	"golang.org/x/sync/errgroup"

	"github.com/fsctl/fsctl/auth"
	"github.com/fsctl/fsctl/control"
	"github.com/fsctl/fsctl/events"
	"github.com/fsctl/fsctl/ingest"
	"github.com/fsctl/fsctl/kafkaconn"
	"github.com/fsctl/fsctl/lifecycle"
	"github.com/fsctl/fsctl/orders"
	"github.com/fsctl/fsctl/payment"
	"github.com/fsctl/fsctl/payment/fake"
	"github.com/fsctl/fsctl/readmodel"
	"github.com/fsctl/fsctl/redisconn"
	"github.com/fsctl/fsctl/reservation"
	"github.com/fsctl/fsctl/room"
	"github.com/fsctl/fsctl/stock"
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

// Open connects to the services, migrates, creates the topics, loads the scripts and builds the
// roles asked for. Every failure names the service and how to reach it.
func Open(ctx context.Context, cfg AppConfig, log *slog.Logger) (*App, error) {
	if cfg.OrdersTopic == "" {
		cfg.OrdersTopic = events.DefaultOrdersTopic
	}
	if cfg.DeadLetterTopic == "" {
		cfg.DeadLetterTopic = events.DefaultDeadLetterTopic
	}
	if cfg.Partitions == 0 {
		cfg.Partitions = 6
	}
	if cfg.Lifecycle == (lifecycle.Config{}) {
		cfg.Lifecycle = lifecycle.DefaultConfig()
	}
	if cfg.ControlPoll == 0 {
		cfg.ControlPoll = 250 * time.Millisecond
	}
	if cfg.RoomTick == 0 {
		cfg.RoomTick = 100 * time.Millisecond
	}
	a := &App{cfg: cfg, log: log, metricsAt: make(chan net.Addr, 1)}
	ok := false
	defer func() {
		if !ok {
			a.Close()
		}
	}()
	raddr, err := redisconn.Parse(cfg.RedisURL)
	if err != nil {
		return nil, err
	}
	// One dial attempt per connection: a node that refuses (a cluster master down) fails the
	// purchases of its shards at once, with a retry answer, instead of after go-redis's five
	// dial attempts times its command retries; the other shards go on selling meanwhile.
	a.rdb = raddr.Open(redisconn.Tune{PoolSize: 256, DialerRetries: 1, DialTimeout: 2 * time.Second})
	batch := cfg.RedisBatch
	switch {
	case batch == 0:
		batch = stock.DefaultBatchMax
	case batch < 0:
		batch = 0 // off
	}
	opts := []stock.Option{stock.Batch(batch, stock.DefaultBatchLanes)}
	if cfg.IdemTTL > 0 {
		opts = append(opts, stock.IdemTTL(cfg.IdemTTL))
	}
	a.Stock = stock.New(a.rdb, opts...)
	a.Switches = control.NewStore(a.rdb, cfg.SwitchesKey)
	a.watcher = control.NewWatcher(a.Switches, cfg.ControlPoll, log)
	// Everything the start reads from Redis waits together: a Redis that restarts between two of
	// these reads (a game day found one) is waited for, not a reason to exit.
	err = waitReady(ctx, "redis", cfg.StartWait, 2*time.Second, log, func(ctx context.Context) error {
		if err := redisconn.Check(ctx, a.rdb); err != nil {
			return err
		}
		if err := a.Stock.LoadScripts(ctx); err != nil {
			return err
		}
		return a.watcher.Refresh(ctx)
	}, func(err error) bool { return !errors.Is(err, redisconn.ErrWrongKind) })
	if err != nil {
		return nil, err
	}
	// Only a PostgreSQL that cannot be reached (or is starting) is waited for: a wrong password or
	// database is not going to get better.
	err = waitReady(ctx, "postgres", cfg.StartWait, 10*time.Second, log, func(ctx context.Context) error {
		if cfg.Migrate {
			if _, err := orders.Migrate(ctx, cfg.PostgresURL); err != nil {
				return err
			}
		}
		var err error
		a.Orders, err = orders.Open(ctx, cfg.PostgresURL)
		return err
	}, storeDown)
	if err != nil {
		return nil, err
	}
	// A broker coming back answers protocol errors (no controller, no leader yet) before it
	// serves: those are waited out. A refused login or a certificate this client does not accept
	// is not going to get better: the start stops on it once every try for lastingFor was refused
	// so (a secure broker killed or starting refused a login it took a moment later: the game day's
	// server-add met it).
	var refusedSince time.Time
	err = waitReady(ctx, "kafka", cfg.StartWait, 30*time.Second, log, func(ctx context.Context) error {
		for _, t := range []string{cfg.OrdersTopic, cfg.DeadLetterTopic} {
			if err := events.EnsureTopic(ctx, cfg.Kafka, t, cfg.Partitions); err != nil {
				return err
			}
		}
		if cfg.ReadModel == ReadModelEvents {
			return events.EnsureCompactedTopic(ctx, cfg.Kafka, cmp.Or(cfg.StockTopic, events.DefaultStockTopic), stockPartitions)
		}
		return nil
	}, func(err error) bool {
		if !cfg.Kafka.Lasting(err) {
			refusedSince = time.Time{}
			return true
		}
		if refusedSince.IsZero() {
			refusedSince = time.Now()
		}
		return time.Since(refusedSince) < lastingFor
	})
	if err != nil {
		return nil, err
	}
	if a.pub, err = events.NewPublisher(cfg.Kafka, cfg.OrdersTopic); err != nil {
		return nil, err
	}
	if a.dlq, err = events.NewPublisher(cfg.Kafka, cfg.DeadLetterTopic); err != nil {
		return nil, err
	}
	verifier, err := a.openVerifier(ctx, cfg)
	if err != nil {
		return nil, err
	}
	payments, err := a.openPayments(cfg)
	if err != nil {
		return nil, err
	}
	rm, tokens, challenges, err := a.openRoom(ctx, cfg)
	if err != nil {
		return nil, err
	}
	a.Room = rm
	reserver, err := a.openReservations(cfg)
	if err != nil {
		return nil, err
	}
	a.Server = New(cfg.Server, Deps{
		Auth: verifier, Stock: reserver, Publisher: a.pub, Orders: a.Orders, Log: log,
		Switches: a.watcher, SwitchStore: a.Switches,
		Room: rm, Tokens: tokens, Challenges: challenges, Limiter: NewRedisLimiter(a.rdb),
		Tracer: cfg.Tracer,
		Probes: map[string]Probe{
			"redis":    a.probeRedis,
			"postgres": func(ctx context.Context) error { return a.Orders.Pool().Ping(ctx) },
			"kafka":    func(ctx context.Context) error { return events.Ping(ctx, cfg.Kafka) },
		},
	})
	a.Lifecycle = lifecycle.New(cfg.Lifecycle, lifecycle.Deps{
		Orders: a.Orders, Stock: a.Stock, Payments: payments, Publisher: a.pub, Log: log,
		Metrics: a.Server.LifecycleMetrics(),
		Enabled: func(job string) bool { return !a.watcher.Off(job) },
		Tracer:  cfg.Tracer,
	})
	a.Server.life = a.Lifecycle
	if a.reservations != nil {
		a.Server.probes["reservation"] = a.reservations.Check
	}
	if a.stopJWKS != nil {
		a.Server.probes["jwks"] = verifier.Ready
	}
	if cfg.Consumer {
		icfg := ingest.DefaultConfig(cfg.Kafka)
		icfg.Topic = cfg.OrdersTopic
		if cfg.ConsumerSession > 0 {
			icfg.SessionTimeout = cfg.ConsumerSession
		}
		if cfg.ConsumerGroup != "" {
			icfg.GroupID = cfg.ConsumerGroup
		}
		if a.consumer, err = ingest.New(icfg, a.Orders, a.Stock, a.dlq, a.Server.ConsumerMetrics(), log); err != nil {
			return nil, err
		}
		a.consumer.Trace(cfg.Tracer)
	}
	if err := a.openReadModel(cfg); err != nil {
		return nil, err
	}
	a.watchSale() // stock, holds, consumer lag and readiness gauges, read on scrape (metrics_sale.go)
	ok = true
	return a, nil
}

// openRoom connects the waiting room's Redis (the stock Redis unless RoomRedisURL says otherwise)
// and builds the admission token signer and the proof-of-work issuer. An unreachable room Redis
// does not stop the start: the sale's fail mode decides what buyers get while it is away.
func (a *App) openRoom(ctx context.Context, cfg AppConfig) (*room.Store, *room.Tokens, *room.Challenges, error) {
	a.roomRdb = a.rdb
	if cfg.RoomRedisURL != "" && cfg.RoomRedisURL != cfg.RedisURL {
		addr, err := redisconn.Parse(cfg.RoomRedisURL)
		if err != nil {
			return nil, nil, nil, fmt.Errorf("room redis: %w", err)
		}
		a.roomRdb = addr.Open(redisconn.Tune{PoolSize: 128})
	}
	rm := room.New(a.roomRdb)
	if err := rm.LoadScripts(ctx); err != nil {
		a.log.Warn("waiting room Redis unreachable at start; sales with a room follow their fail mode until it is back", "err", err)
	}
	secret := cfg.RoomSecret
	if len(secret) == 0 {
		secret = derive(cfg.JWTSecret, "fsctl waiting room")
	}
	tokens, err := room.NewTokens(derive(secret, "admission tokens"), nil)
	if err != nil {
		return nil, nil, nil, err
	}
	challenges, err := room.NewChallenges(derive(secret, "proof of work"), nil)
	if err != nil {
		return nil, nil, nil, err
	}
	return rm, tokens, challenges, nil
}

// derive makes an independent key for one purpose from a secret (HMAC-SHA256 as a KDF), so one
// configured secret never signs two kinds of thing.
func derive(secret []byte, purpose string) []byte {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(purpose))
	return m.Sum(nil)
}

// openPayments builds the payment client behind its circuit breaker; with no provider URL it starts
// the bundled fake provider on a loopback port.
func (a *App) openPayments(cfg AppConfig) (*payment.Breaker, error) {
	url := cfg.PaymentURL
	if url == "" {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("start the bundled payment provider: %w", err)
		}
		a.fakePay = &http.Server{Handler: fake.New(fake.Config{}, nil).Handler(), ReadHeaderTimeout: 5 * time.Second}
		go func() { _ = a.fakePay.Serve(ln) }()
		url = "http://" + ln.Addr().String()
		a.log.Warn("no --payment-url: using the bundled fake payment provider (tok_ok pays, tok_decline declines)", "url", url)
	}
	client := payment.NewHTTPClient(url, cfg.Lifecycle.PaymentTimeout)
	client.Trace(cfg.Tracer)
	return payment.NewBreaker(client, cfg.Breaker, func(name string, from, to payment.State) {
		a.log.Warn("payment circuit breaker changed state", "breaker", name, "from", from.String(), "to", to.String())
		if a.Server != nil {
			a.Server.SetBreakerState(int(to))
		}
	}), nil
}

func (a *App) probeRedis(ctx context.Context) error {
	loaded, err := a.Stock.ScriptsLoaded(ctx)
	if err != nil {
		return err
	}
	if !loaded {
		// Redis restarted and lost its script cache; EVALSHA falls back, but say so and reload.
		if err := a.Stock.LoadScripts(ctx); err != nil {
			return fmt.Errorf("scripts not loaded: %w", err)
		}
	}
	return nil
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

// waitReady tries a store, each try bounded by tryFor, until it answers, ctx ends or limit has
// passed (then the last error stands), saying every 3 s that it waits; an error that retry (nil:
// every error) does not call worth waiting out ends it at once.
func waitReady(ctx context.Context, what string, limit, tryFor time.Duration, log *slog.Logger, try func(context.Context) error, retry func(error) bool) error {
	deadline, said := time.Now().Add(limit), time.Time{}
	for {
		cctx, cancel := context.WithTimeout(ctx, tryFor)
		err := try(cctx)
		cancel()
		if err == nil || retry != nil && !retry(err) || time.Now().After(deadline) || ctx.Err() != nil {
			return err
		}
		if time.Since(said) > 3*time.Second {
			log.Warn(what+" not ready; waiting", "for", time.Until(deadline).Round(time.Second), "err", err)
			said = time.Now()
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// lastingFor is how long Kafka must refuse a login or a certificate, try after try, before a
// start gives up on it.
const lastingFor = 3 * time.Second

// stockPartitions is the stock topic's partition count: its traffic is one small message per
// changed item per publisher flush, and every API instance reads every partition.
const stockPartitions = 1

// openReadModel wires the event-fed read model of the sale page (ReadModelEvents): the order
// consumer and the lifecycle jobs tell a snapshot publisher which items they changed, and the API
// serves the page from a view of the stock topic (package readmodel says why).
func (a *App) openReadModel(cfg AppConfig) error {
	if cfg.ReadModel != ReadModelEvents {
		return nil
	}
	topic := cmp.Or(cfg.StockTopic, events.DefaultStockTopic)
	if cfg.API {
		view, err := readmodel.NewView(readmodel.ViewConfig{Kafka: cfg.Kafka, Topic: topic}, a.rdb, a.log)
		if err != nil {
			return err
		}
		a.view = view
		a.Server.SetStockView(a.view)
	}
	if a.consumer == nil && !cfg.Workers {
		return nil
	}
	pub, err := events.NewPublisher(cfg.Kafka, topic)
	if err != nil {
		return err
	}
	a.stockPub = pub
	a.snapshots = readmodel.NewPublisher(a.rdb, a.stockPub, 0, 0, a.log)
	a.Lifecycle.StockChanged = func(item stock.ItemRef) { a.snapshots.Changed(item) }
	if a.consumer != nil {
		a.consumer.OnRecorded(func(items []stock.ItemRef) { a.snapshots.Changed(items...) })
	}
	return nil
}
