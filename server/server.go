// Package server is the reference flash-sale checkout server: the HTTP purchase path over the Redis
// reserve script, the Kafka hand-off to PostgreSQL, order and sale reads, health and metrics.
package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"golang.org/x/net/netutil"

	"github.com/fsctl/fsctl/auth"
	"github.com/fsctl/fsctl/events"
	"github.com/fsctl/fsctl/ingest"
	"github.com/fsctl/fsctl/orders"
	"github.com/fsctl/fsctl/sale"
	"github.com/fsctl/fsctl/stock"
)

// Reserver is the Redis stage of the purchase path. It is an interface so that concurrent reserves
// can later be batched into pipelined round trips without touching the handlers.
type Reserver interface {
	Reserve(ctx context.Context, r stock.Request) (stock.Reservation, error)
	Release(ctx context.Context, r stock.Release) (bool, error)
	SetOrderRef(ctx context.Context, orderID uuid.UUID, saleID, itemID, userID string) error
	LookupOrder(ctx context.Context, orderID uuid.UUID) (stock.OrderState, bool, error)
	Snapshot(ctx context.Context, saleID string, itemIDs []string) ([]stock.ItemState, error)
}

// OrderPublisher hands a reserved order to the pipeline that records it.
type OrderPublisher interface {
	PublishOrderPlaced(ctx context.Context, e events.OrderPlaced) error
}

// OrderStore reads the source of truth.
type OrderStore interface {
	GetOrder(ctx context.Context, id uuid.UUID) (orders.Order, error)
	LoadSale(ctx context.Context, id string) (sale.Sale, error)
}

// Probe checks one dependency for /readyz.
type Probe func(ctx context.Context) error

// Config holds the server's settings.
type Config struct {
	// Addr is the listen address, e.g. ":8080".
	Addr string
	// MaxConns caps open client connections; further ones wait in the kernel's accept queue.
	MaxConns int
	// PublishTimeout bounds how long a purchase waits for Kafka's acknowledgement.
	PublishTimeout time.Duration
	// ReadModelTTL is how stale the remaining-stock numbers of GET /sales/{id} may be.
	ReadModelTTL time.Duration
	// Version is reported by /readyz.
	Version string
}

// DefaultConfig returns production-minded defaults.
func DefaultConfig() Config {
	return Config{
		Addr:           ":8080",
		MaxConns:       16384,
		PublishTimeout: 5 * time.Second,
		ReadModelTTL:   500 * time.Millisecond,
		Version:        "dev",
	}
}

// Server serves the checkout API.
type Server struct {
	cfg     Config
	auth    *auth.Verifier
	stock   Reserver
	pub     OrderPublisher
	store   OrderStore
	probes  map[string]Probe
	metrics *metrics
	log     *slog.Logger
	now     func() time.Time
	newID   func() (uuid.UUID, error)
	catalog *catalog
}

// Deps are what a Server is built from.
type Deps struct {
	Auth      *auth.Verifier
	Stock     Reserver
	Publisher OrderPublisher
	Orders    OrderStore
	// Probes are checked by /readyz, by name (e.g. "redis", "postgres", "kafka").
	Probes map[string]Probe
	Log    *slog.Logger
	// Now and NewID default to time.Now and uuid.NewV7.
	Now   func() time.Time
	NewID func() (uuid.UUID, error)
}

// New returns a server.
func New(cfg Config, d Deps) *Server {
	s := &Server{
		cfg: cfg, auth: d.Auth, stock: d.Stock, pub: d.Publisher, store: d.Orders,
		probes: d.Probes, metrics: newMetrics(), log: d.Log, now: d.Now, newID: d.NewID,
	}
	if s.log == nil {
		s.log = slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	if s.now == nil {
		s.now = time.Now
	}
	if s.newID == nil {
		s.newID = uuid.NewV7
	}
	s.catalog = newCatalog(d.Orders, d.Stock, cfg.ReadModelTTL, s.now)
	return s
}

// Handler returns the HTTP routes.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	route := func(pattern string, h http.HandlerFunc) {
		mux.Handle(pattern, s.instrument(pattern, h))
	}
	route("POST /api/v1/sales/{sale}/items/{item}/purchase", s.handlePurchase)
	route("GET /api/v1/orders/{id}", s.handleGetOrder)
	route("GET /api/v1/sales/{sale}", s.handleGetSale)
	route("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	})
	route("GET /readyz", s.handleReady)
	mux.Handle("GET /metrics", promhttp.HandlerFor(s.metrics.reg, promhttp.HandlerOpts{}))
	return s.jsonFallback(mux)
}

// ConsumerMetrics returns callbacks that feed the order consumer's numbers into /metrics.
func (s *Server) ConsumerMetrics() ingest.Metrics { return s.metrics.consumerMetrics() }

// Serve listens on cfg.Addr and serves until ctx ends, then shuts down gracefully. ready, when
// not nil, receives the bound address once the listener is open.
func (s *Server) Serve(ctx context.Context, ready func(addr net.Addr)) error {
	ln, err := net.Listen("tcp", s.cfg.Addr)
	if err != nil {
		return fmt.Errorf("listen %s: %w", s.cfg.Addr, err)
	}
	if s.cfg.MaxConns > 0 {
		ln = netutil.LimitListener(ln, s.cfg.MaxConns)
	}
	var protocols http.Protocols
	protocols.SetHTTP1(true)
	protocols.SetUnencryptedHTTP2(true)
	hs := &http.Server{
		Handler:           s.Handler(),
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       10 * time.Second,
		WriteTimeout:      15 * time.Second,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    16 << 10,
		Protocols:         &protocols,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
	}
	s.log.Info("serving checkout API", "addr", ln.Addr().String(), "max_conns", s.cfg.MaxConns,
		"accept_backlog", acceptBacklog(), "protocols", "HTTP/1.1, h2c")
	if ready != nil {
		ready(ln.Addr())
	}
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := hs.Shutdown(shutdownCtx); err != nil {
		return fmt.Errorf("shutdown: %w", err)
	}
	if err := <-errc; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// acceptBacklog is the listen backlog Go asks the kernel for: net.core.somaxconn.
func acceptBacklog() int {
	b, err := os.ReadFile("/proc/sys/net/core/somaxconn")
	if err != nil {
		return 0
	}
	n, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	return n
}
