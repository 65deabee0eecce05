// Command articleshop runs the articleshop flash-sale checkout: the HTTP API and the order
// consumer in one process, the way the article's single Spring Boot service does.
//
//	go run ./examples/articleshop/cmd/articleshop --item 1001=50
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/fsctl/fsctl/examples/articleshop"
)

// items collects repeatable --item ID=QUANTITY flags.
type items []item

type item struct {
	id       int64
	quantity int
}

// String implements flag.Value.
func (it *items) String() string { return fmt.Sprint(*it) }

// Set implements flag.Value: one ID=QUANTITY per flag.
func (it *items) Set(v string) error {
	idStr, qStr, ok := strings.Cut(v, "=")
	id, err1 := strconv.ParseInt(idStr, 10, 64)
	q, err2 := strconv.Atoi(qStr)
	if !ok || err1 != nil || err2 != nil || id <= 0 || q < 0 {
		return fmt.Errorf("want ID=QUANTITY with a positive id and a non-negative quantity, got %q", v)
	}
	*it = append(*it, item{id: id, quantity: q})
	return nil
}

// env returns the environment variable's value, or def when it is unset or blank.
func env(name, def string) string {
	if v := strings.TrimSpace(os.Getenv(name)); v != "" {
		return v
	}
	return def
}

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "articleshop:", err)
		os.Exit(1)
	}
}

func run() error {
	var cfg articleshop.Config
	var brokers, keyPath string
	var seed items
	flag.StringVar(&cfg.Addr, "addr", env("ARTICLESHOP_ADDR", "127.0.0.1:8090"), "listen address (ARTICLESHOP_ADDR)")
	flag.StringVar(&cfg.RedisURL, "redis-url", env("FSCTL_REDIS_URL", "redis://127.0.0.1:16379/0"), "Redis URL (FSCTL_REDIS_URL)")
	flag.StringVar(&cfg.PostgresURL, "postgres-url", env("FSCTL_POSTGRES_URL", "postgres://fsctl@127.0.0.1:15432/fsctl?sslmode=disable"), "PostgreSQL URL (FSCTL_POSTGRES_URL)")
	flag.StringVar(&brokers, "kafka-brokers", env("FSCTL_KAFKA_BROKERS", "127.0.0.1:19092"), "comma-separated Kafka brokers (FSCTL_KAFKA_BROKERS)")
	flag.StringVar(&cfg.Topic, "topic", articleshop.DefaultTopic, "Kafka order topic")
	flag.StringVar(&cfg.Group, "group", articleshop.DefaultGroup, "Kafka consumer group")
	flag.StringVar(&keyPath, "jwt-public-key", env("ARTICLESHOP_JWT_PUBLIC_KEY", "examples/articleshop/keys/buyer-signing.pub.pem"), "PEM file of the RSA key that verifies buyer tokens (ARTICLESHOP_JWT_PUBLIC_KEY)")
	flag.Var(&seed, "item", "ID=QUANTITY: create the item if missing and preheat its stock (repeatable)")
	flag.StringVar(&cfg.PublishVia, "publish-via", "", "host:port of a TCP proxy in front of a single broker that the order writer dials instead (a Toxiproxy proxy in a fault drill)")
	flag.DurationVar(&cfg.PublishTimeout, "publish-timeout", 3*time.Second, "bound on the publish of one order; past it the reservation is released and the buyer told 503")
	flag.BoolVar(&cfg.LoseOrders, "lose-orders-on-publish-error", false, "a planted lie for fsctl's own tests: tell the buyer 202 when the publish failed, and lose the order")
	flag.Parse()

	for _, b := range strings.Split(brokers, ",") {
		if b = strings.TrimSpace(b); b != "" {
			cfg.Brokers = append(cfg.Brokers, b)
		}
	}
	key, err := articleshop.LoadPublicKey(keyPath)
	if err != nil {
		return err
	}
	cfg.PublicKey = key
	cfg.Logger = slog.New(slog.NewTextHandler(os.Stderr, nil))

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	openCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	shop, err := articleshop.Open(openCtx, cfg)
	cancel()
	if err != nil {
		return err
	}
	defer shop.Close()

	for _, it := range seed {
		if err := shop.CreateItem(ctx, it.id, "item-"+strconv.FormatInt(it.id, 10), it.quantity); err != nil {
			return err
		}
		if err := shop.Preheat(ctx, it.id); err != nil {
			return err
		}
		cfg.Logger.Info("item preheated", "item", it.id)
	}

	consumerDone := make(chan error, 1)
	go func() { consumerDone <- shop.Run(ctx) }()

	srv := &http.Server{Addr: cfg.Addr, Handler: shop.Handler(), ReadHeaderTimeout: 5 * time.Second}
	serveErr := make(chan error, 1)
	go func() { serveErr <- srv.ListenAndServe() }()
	cfg.Logger.Info("articleshop listening", "addr", cfg.Addr, "topic", cfg.Topic, "group", cfg.Group)

	select {
	case <-ctx.Done():
	case err := <-serveErr:
		if !errors.Is(err, http.ErrServerClosed) {
			stop()
			<-consumerDone
			return err
		}
	}
	stop()
	// Let in-flight purchases finish (and publish) before the consumer and connections go.
	shutCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err = srv.Shutdown(shutCtx)
	if cerr := <-consumerDone; cerr != nil && err == nil {
		err = cerr
	}
	cfg.Logger.Info("articleshop stopped")
	return err
}
