// Package server is the reference flash-sale checkout server: the HTTP purchase path over the Redis
// reserve script and the Kafka hand-off to PostgreSQL, payment and cancellation through package
// lifecycle, order and sale reads, the operator's /admin/v1 API, health and metrics.
package server

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"go.opentelemetry.io/otel/trace"

	"github.com/fsctl/fsctl/internal/checkout/auth"
	"github.com/fsctl/fsctl/internal/checkout/events"
	"github.com/fsctl/fsctl/internal/checkout/ingest"
	"github.com/fsctl/fsctl/internal/checkout/lifecycle"
	"github.com/fsctl/fsctl/internal/checkout/orders"
	"github.com/fsctl/fsctl/internal/checkout/reservation"
	"github.com/fsctl/fsctl/internal/checkout/room"
	"github.com/fsctl/fsctl/internal/contract/sale"
	"github.com/fsctl/fsctl/internal/platform/tracing"
)

// Reserver is the Redis stage of the purchase path: the reservation service's store, which
// *stock.Store implements in-process (sharing the round trips of concurrent purchases,
// stock.Batch) and *reservation.Client over gRPC. One list of methods, in package reservation.
type Reserver = reservation.Store

// Lifecycle ends reservations: payment and cancellation; *lifecycle.Service implements it.
type Lifecycle interface {
	Pay(ctx context.Context, req lifecycle.PayRequest) (lifecycle.PayResult, error)
	Cancel(ctx context.Context, id uuid.UUID, userID string) (orders.Order, error)
}

// Switches answers whether an operator's kill switch is thrown; *control.Watcher implements it.
type Switches interface {
	Off(name string) bool
}

// SwitchStore reads and throws the kill switches for the admin API; *control.Store implements it.
type SwitchStore interface {
	Get(ctx context.Context) (map[string]bool, error)
	Set(ctx context.Context, name string, off bool) error
}

// OrderPublisher hands a reserved order to the pipeline that records it.
type OrderPublisher interface {
	PublishOrderPlaced(ctx context.Context, e events.OrderPlaced) error
}

// OrderStore reads the source of truth.
type OrderStore interface {
	GetOrder(ctx context.Context, id uuid.UUID) (orders.Order, error)
	LoadSale(ctx context.Context, id string) (sale.Sale, error)
	SetPaused(ctx context.Context, saleID string, paused bool) error
	SetRoom(ctx context.Context, saleID string, r sale.Room) (revision int64, err error)
	RoomSaleIDs(ctx context.Context) ([]string, error)
}

// Probe checks one dependency for /readyz.
type Probe func(ctx context.Context) error

// Config holds the server's settings.
type Config struct {
	// Addr is the listen address, e.g. ":8080".
	Addr string
	// MaxConns caps the client connections the checkout serves; zero means no cap.
	MaxConns int
	// ShedConns caps the connections beyond MaxConns that are answered 503 OVERLOADED (GET
	// /healthz 200) and closed; beyond both a connection is closed at once (server/overload.go).
	ShedConns int
	// ReadHeaderTimeout drops a client that has not sent its request's headers in this long (a
	// slowloris holds a connection slot no longer).
	ReadHeaderTimeout time.Duration
	// WriteTimeout cuts a connection whose answer has not been written this long after its
	// request was read (a client that never reads).
	WriteTimeout time.Duration
	// PublishTimeout bounds how long a purchase waits for Kafka's acknowledgement.
	PublishTimeout time.Duration
	// PurchaseDeadline bounds how long a buyer waits for a purchase's answer: past it the buyer
	// hears 503 UNAVAILABLE with a Retry-After while the purchase goes on (deadline.go); 0: none.
	PurchaseDeadline time.Duration
	// ReadModelTTL is how stale the remaining-stock numbers of GET /sales/{id} may be.
	ReadModelTTL time.Duration
	// Version is reported by /readyz and, with Commit, by fsctl_build_info.
	Version string
	Commit  string
	// AdminToken guards /admin/v1; empty turns the admin API off.
	AdminToken string
	// SoldOut is how the instance's local sold-out flag answers (SoldOutVerify by default).
	SoldOut SoldOutMode
	// SoldOutPoll is how often flagged items are checked for stock that came back.
	SoldOutPoll time.Duration
	// ClientIPHeader, when set (e.g. X-Forwarded-For), names the header a trusted proxy puts the
	// client's address in, for the per-address rate limits.
	ClientIPHeader string
	// TLSCertFile and TLSKeyFile, both set, serve TLS (and HTTP/2 over it) with this key pair,
	// re-read when the files change (server/tls.go); both empty serve plain text.
	TLSCertFile, TLSKeyFile string
	// MetricsAddr, when set, serves /metrics (with /healthz and /readyz) on a listener of its own
	// (ServeMetrics), and the API's address no longer answers /metrics: buyers cannot read it.
	MetricsAddr string
	// CrashAfterReserve, above zero, is a game day's fault: the process exits (status 137, as if
	// SIGKILLed) right after its Nth fresh reservation, before the hand-off to Kafka.
	CrashAfterReserve int
}

// DefaultConfig returns production-minded defaults.
func DefaultConfig() Config {
	return Config{
		Addr:              ":8080",
		MaxConns:          16384,
		ShedConns:         1024,
		ReadHeaderTimeout: 5 * time.Second,
		WriteTimeout:      15 * time.Second,
		PublishTimeout:    5 * time.Second,
		PurchaseDeadline:  DefaultPurchaseDeadline,
		ReadModelTTL:      500 * time.Millisecond,
		Version:           "dev",
		Commit:            "unknown",
		SoldOut:           SoldOutVerify,
		SoldOutPoll:       100 * time.Millisecond,
	}
}

// Server serves the checkout API.
type Server struct {
	cfg        Config
	auth       *auth.Verifier
	stock      Reserver
	pub        OrderPublisher
	store      OrderStore
	life       Lifecycle
	sw         Switches
	swStore    SwitchStore
	soldOut    *soldOutFlags
	room       Room
	tokens     *room.Tokens
	challenges *room.Challenges
	limiter    RateLimiter
	crash      *crashHook
	// roomUp is false while the waiting room's state cannot be reached.
	roomUp  atomic.Bool
	probes  map[string]Probe
	metrics *metrics
	// tracer is nil when tracing is off (tracing.Start then does nothing).
	tracer  trace.Tracer
	log     *slog.Logger
	now     func() time.Time
	newID   func() (uuid.UUID, error)
	catalog *catalog
	// reserveClock bounds a purchase from its reserve on: the publish timeout and reserveBudget.
	reserveClock *coarseClock
	// reveal signs and checks the purchase paths of sales with reveal on (reveal.go).
	reveal *revealer
}

// Deps are what a Server is built from.
type Deps struct {
	Auth      *auth.Verifier
	Stock     Reserver
	Publisher OrderPublisher
	Orders    OrderStore
	Lifecycle Lifecycle
	// Switches (read on the hot path) and SwitchStore (for the admin API) may be nil: no switches.
	Switches    Switches
	SwitchStore SwitchStore
	// Room, Tokens and Challenges run the waiting room; nil Room means sales cannot use one.
	Room       Room
	Tokens     *room.Tokens
	Challenges *room.Challenges
	// Limiter enforces the sales' rate limits; nil means none.
	Limiter RateLimiter
	// Probes are checked by /readyz, by name (e.g. "redis", "postgres", "kafka").
	Probes map[string]Probe
	Log    *slog.Logger
	// Tracer traces requests, the purchase path and the order hand-off; nil or a no-op provider: off.
	Tracer trace.TracerProvider
	// Now and NewID default to time.Now and uuid.NewV7.
	Now   func() time.Time
	NewID func() (uuid.UUID, error)
}

// New returns a server.
func New(cfg Config, d Deps) *Server {
	s := &Server{
		cfg: cfg, auth: d.Auth, stock: d.Stock, pub: d.Publisher, store: d.Orders,
		life: d.Lifecycle, sw: d.Switches, swStore: d.SwitchStore, probes: d.Probes,
		room: d.Room, tokens: d.Tokens, challenges: d.Challenges, limiter: d.Limiter, metrics: newMetrics(), log: d.Log, now: d.Now, newID: d.NewID,
		tracer: tracing.Tracer(d.Tracer),
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
	if s.sw == nil {
		s.sw = noSwitches{}
	}
	s.metrics.buildInfo(cfg.Version, cfg.Commit)
	s.reveal = newRevealer(d.Auth, s.metrics.reg)
	s.crash = newCrashHook(cfg.CrashAfterReserve, os.Exit)
	s.roomUp.Store(true)
	s.watchRoom()
	s.catalog = newCatalog(d.Orders, d.Stock, cfg.ReadModelTTL, s.now, s.log)
	s.soldOut = newSoldOutFlags(d.Stock, s.log)
	s.reserveClock = newCoarseClock(cfg.PublishTimeout + reserveBudget)
	return s
}

// Handler returns the HTTP routes.
func (s *Server) Handler() http.Handler {
	// Every route is in both muxes: mux serves, with a catch-all that asks routes (which has none)
	// what it would answer a request no route takes (jsonFallback), so a request is routed once.
	mux, routes := http.NewServeMux(), http.NewServeMux()
	handle := func(pattern string, h http.Handler) {
		mux.Handle(pattern, h)
		routes.Handle(pattern, h)
	}
	route := func(pattern string, h http.HandlerFunc) { handle(pattern, s.instrument(pattern, h)) }
	route("POST /api/v1/sales/{sale}/items/{item}/purchase", s.answerWithin(s.handlePurchase))
	route("GET /api/v1/sales/{sale}/items/{item}/purchase-path", s.handlePurchasePath)
	route("POST /api/v1/sales/{sale}/items/{item}/purchase/{token}", s.answerWithin(s.handleRevealedPurchase))
	route("GET /api/v1/orders/{id}", s.handleGetOrder)
	route("POST /api/v1/orders/{id}/pay", s.handlePay)
	route("DELETE /api/v1/orders/{id}", s.handleCancel)
	route("GET /api/v1/sales/{sale}", s.handleGetSale)
	route("GET /api/v1/sales/{sale}/queue/challenge", s.handleChallenge)
	route("POST /api/v1/sales/{sale}/queue", s.handleJoin)
	route("GET /api/v1/sales/{sale}/queue/{ticket}", s.handlePoll)
	s.adminRoutes(route)
	route("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	})
	route("GET /readyz", s.handleReady)
	if s.cfg.MetricsAddr == "" {
		handle("GET /metrics", s.metrics.handler())
	}
	mux.Handle("/", s.jsonFallback(routes))
	return mux
}

// ConsumerMetrics returns callbacks that feed the order consumer's numbers into /metrics.
func (s *Server) ConsumerMetrics() ingest.Metrics { return s.metrics.consumerMetrics() }

// Serve listens on cfg.Addr and serves until ctx ends, then shuts down gracefully. ready, when
// not nil, receives the bound address once the listener is open.
func (s *Server) Serve(ctx context.Context, ready func(addr net.Addr)) error {
	var tlsCfg *tls.Config
	if s.cfg.TLSCertFile != "" || s.cfg.TLSKeyFile != "" {
		if s.cfg.TLSCertFile == "" || s.cfg.TLSKeyFile == "" {
			return errors.New("--tls-cert and --tls-key go together: the certificate and its private key")
		}
		var err error
		if tlsCfg, err = s.tlsConfig(); err != nil {
			return err
		}
	}
	ln, err := net.Listen("tcp", s.cfg.Addr)
	if err != nil {
		return fmt.Errorf("listen %s: %w", s.cfg.Addr, err)
	}
	var shed *http.Server
	if s.cfg.MaxConns > 0 {
		a := newAdmission(ln, s.cfg.MaxConns, s.cfg.ShedConns, s.metrics.shed)
		s.metrics.watchAdmission(a)
		ln, shed = a, s.shedServer()
		if tlsCfg != nil {
			// HTTP/1.1 only: the shed server answers once per connection, which h2 streams would undo.
			shed.TLSConfig, shed.Protocols = tlsCfg.Clone(), new(http.Protocols)
			shed.Protocols.SetHTTP1(true)
		}
		go s.serveShed(shed, a)
	}
	var protocols http.Protocols
	protocols.SetHTTP1(true)
	names := "HTTP/1.1, h2c"
	if tlsCfg != nil {
		protocols.SetHTTP2(true)
		names = "HTTP/1.1 over TLS, h2"
	} else {
		protocols.SetUnencryptedHTTP2(true)
	}
	hs := &http.Server{
		Handler:           s.Handler(),
		ReadHeaderTimeout: s.cfg.ReadHeaderTimeout,
		ReadTimeout:       10 * time.Second,
		WriteTimeout:      s.cfg.WriteTimeout,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    16 << 10,
		Protocols:         &protocols,
		TLSConfig:         tlsCfg,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
	}
	s.log.Info("serving checkout API", "addr", ln.Addr().String(), "max_conns", s.cfg.MaxConns, "shed_conns", s.cfg.ShedConns,
		"accept_backlog", acceptBacklog(), "protocols", names)
	if ready != nil {
		ready(ln.Addr())
	}
	errc := make(chan error, 1)
	go func() {
		if tlsCfg != nil {
			errc <- hs.ServeTLS(ln, "", "")
			return
		}
		errc <- hs.Serve(ln)
	}()
	if s.cfg.SoldOut != SoldOutOff {
		go s.soldOut.run(ctx, s.cfg.SoldOutPoll)
	}
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if shed != nil {
		// Nothing on the shed server is worth waiting for: every answer there is "retry".
		defer shed.Close()
	}
	if err := hs.Shutdown(shutdownCtx); err != nil {
		return fmt.Errorf("shutdown: %w", err)
	}
	if err := <-errc; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

type noSwitches struct{}

func (noSwitches) Off(string) bool { return false }

// acceptBacklog is the listen backlog Go asks the kernel for: net.core.somaxconn.
func acceptBacklog() int {
	b, err := os.ReadFile("/proc/sys/net/core/somaxconn")
	if err != nil {
		return 0
	}
	n, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	return n
}
