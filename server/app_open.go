package server

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"time"

	"github.com/fsctl/fsctl/internal/checkout/control"
	"github.com/fsctl/fsctl/internal/checkout/events"
	"github.com/fsctl/fsctl/internal/checkout/ingest"
	"github.com/fsctl/fsctl/internal/checkout/lifecycle"
	"github.com/fsctl/fsctl/internal/checkout/orders"
	"github.com/fsctl/fsctl/internal/checkout/stock"
	"github.com/fsctl/fsctl/internal/platform/redisconn"
)

// Open connects to the services, migrates, creates the topics, loads the scripts and builds the
// roles asked for. Every failure names the service and how to reach it.
func Open(ctx context.Context, cfg AppConfig, log *slog.Logger) (*App, error) {
	cfg = cfg.withDefaults()
	a := &App{cfg: cfg, log: log, metricsAt: make(chan net.Addr, 1)}
	ok := false
	defer func() {
		if !ok {
			a.Close()
		}
	}()
	if err := a.openRedis(ctx, cfg); err != nil {
		return nil, err
	}
	if err := a.openPostgres(ctx, cfg); err != nil {
		return nil, err
	}
	if err := a.openKafka(ctx, cfg); err != nil {
		return nil, err
	}
	if err := a.openServer(ctx, cfg); err != nil {
		return nil, err
	}
	if err := a.openConsumer(cfg); err != nil {
		return nil, err
	}
	if err := a.openReadModel(cfg); err != nil {
		return nil, err
	}
	a.watchSale() // stock, holds, consumer lag and readiness gauges, read on scrape (metrics_sale.go)
	ok = true
	return a, nil
}

// withDefaults is cfg with the settings Open defaults filled in.
func (cfg AppConfig) withDefaults() AppConfig {
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
	return cfg
}

// openRedis connects the stock Redis, builds the stock store and the kill switches over it, and
// waits until it answers with the scripts loaded and the switches read.
func (a *App) openRedis(ctx context.Context, cfg AppConfig) error {
	raddr, err := redisconn.Parse(cfg.RedisURL)
	if err != nil {
		return err
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
	a.watcher = control.NewWatcher(a.Switches, cfg.ControlPoll, a.log)
	// Everything the start reads from Redis waits together: a Redis that restarts between two of
	// these reads (a game day found one) is waited for, not a reason to exit.
	return waitReady(ctx, "redis", cfg.StartWait, 2*time.Second, a.log, func(ctx context.Context) error {
		if err := redisconn.Check(ctx, a.rdb); err != nil {
			return err
		}
		if err := a.Stock.LoadScripts(ctx); err != nil {
			return err
		}
		return a.watcher.Refresh(ctx)
	}, func(err error) bool { return !errors.Is(err, redisconn.ErrWrongKind) })
}

// openPostgres migrates the database when asked and opens the order store.
func (a *App) openPostgres(ctx context.Context, cfg AppConfig) error {
	// Only a PostgreSQL that cannot be reached (or is starting) is waited for: a wrong password or
	// database is not going to get better.
	return waitReady(ctx, "postgres", cfg.StartWait, 10*time.Second, a.log, func(ctx context.Context) error {
		if cfg.Migrate {
			if _, err := orders.Migrate(ctx, cfg.PostgresURL); err != nil {
				return err
			}
		}
		var err error
		a.Orders, err = orders.Open(ctx, cfg.PostgresURL)
		return err
	}, storeDown)
}

// openKafka creates the topics and the publishers of orders and dead letters.
func (a *App) openKafka(ctx context.Context, cfg AppConfig) error {
	// A broker coming back answers protocol errors (no controller, no leader yet) before it
	// serves: those are waited out. A refused login or a certificate this client does not accept
	// is not going to get better: the start stops on it once every try for lastingFor was refused
	// so (a secure broker killed or starting refused a login it took a moment later: the game day's
	// server-add met it).
	var refusedSince time.Time
	err := waitReady(ctx, "kafka", cfg.StartWait, 30*time.Second, a.log, func(ctx context.Context) error {
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
		return err
	}
	if a.pub, err = events.NewPublisher(cfg.Kafka, cfg.OrdersTopic); err != nil {
		return err
	}
	if a.dlq, err = events.NewPublisher(cfg.Kafka, cfg.DeadLetterTopic); err != nil {
		return err
	}
	return nil
}

// openServer builds the HTTP API and the lifecycle service over the opened stores: the check of
// buyers' tokens, the payment provider, the waiting room and what purchases reserve through.
func (a *App) openServer(ctx context.Context, cfg AppConfig) error {
	verifier, err := a.openVerifier(ctx, cfg)
	if err != nil {
		return err
	}
	payments, err := a.openPayments(cfg)
	if err != nil {
		return err
	}
	rm, tokens, challenges, err := a.openRoom(ctx, cfg)
	if err != nil {
		return err
	}
	a.Room = rm
	reserver, err := a.openReservations(cfg)
	if err != nil {
		return err
	}
	a.Server = New(cfg.Server, Deps{
		Auth: verifier, Stock: reserver, Publisher: a.pub, Orders: a.Orders, Log: a.log,
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
		Orders: a.Orders, Stock: a.Stock, Payments: payments, Publisher: a.pub, Log: a.log,
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
	return nil
}

// openConsumer builds the order consumer when this process runs that role.
func (a *App) openConsumer(cfg AppConfig) error {
	if cfg.Consumer {
		icfg := ingest.DefaultConfig(cfg.Kafka)
		icfg.Topic = cfg.OrdersTopic
		if cfg.ConsumerSession > 0 {
			icfg.SessionTimeout = cfg.ConsumerSession
		}
		if cfg.ConsumerGroup != "" {
			icfg.GroupID = cfg.ConsumerGroup
		}
		var err error
		if a.consumer, err = ingest.New(icfg, a.Orders, a.Stock, a.dlq, a.Server.ConsumerMetrics(), a.log); err != nil {
			return err
		}
		a.consumer.Trace(cfg.Tracer)
	}
	return nil
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
