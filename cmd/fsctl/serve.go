package main

import (
	"cmp"
	"log/slog"
	"os"
	"runtime/debug"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/fsctl/fsctl/internal/checkout/reservation"
	"github.com/fsctl/fsctl/server"
)

// defaultGCPercent lets the server's heap grow 4x between collections instead of Go's 2x: a burst
// allocates per request, and at ~100 MiB of live heap the memory is cheaper than the collector's
// CPU on a box the server shares with Redis and Kafka (measured in docs/benchmarks.md).
const defaultGCPercent = 400

func newServeCmd() *cobra.Command {
	var o serveOptions
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Run the reference checkout server (API and order consumer)",
		Long: `Run the reference flash-sale checkout server against Redis, Kafka and PostgreSQL.

The api role answers purchases: one atomic Redis Lua reserve, then OrderPlaced to Kafka with
acks=all before the buyer hears 202; payments (POST /api/v1/orders/{id}/pay) go through a circuit
breaker to the payment provider, and DELETE /api/v1/orders/{id} cancels. The consumer role records
orders and payments in PostgreSQL in batches and dead-letters what the database refuses. Run both
in one process (the default) or split them; migrations are applied at start.

Every instance also runs the lifecycle jobs unless --workers=false: the expiry job (EXPIRED in
PostgreSQL first, then the unit back to Redis, exactly once across instances), the orphaned-hold
sweeper (re-publishes holds whose order never reached PostgreSQL) and the payment claim resolver.

Sales with a waiting room (room: in the sale file) are gated here too: buyers join
POST /api/v1/sales/{sale}/queue, poll it, and buy with the admission token it hands out; every
instance runs admission rounds against the shared queue in Redis (--room-redis-url).

At most --max-conns connections are served at once; the next --shed-conns are answered 503
OVERLOADED with a Retry-After at once (GET /healthz 200) and closed, and any beyond those are
closed unanswered: a client is never left waiting in the accept queue.

With --admin-token, /admin/v1 lets an operator pause and resume a sale and throw kill switches
(purchase, payment, expiry, sweeper); every instance honours them within a quarter second.
Without --payment-url the bundled fake provider runs in-process (see fsctl payments serve).

With --jwks-url, buyers' tokens come from an identity provider: RS256, ES256 or EdDSA tokens are
verified against the keys of its JWKS (fetched at start, every 15 minutes, and again when a token
names a kid the set lacks, at most every 30 seconds), with --jwt-issuer and --jwt-audience checked
when given; HS256 and "none" are refused. The JWT secret then keys only the server's own
signatures. An issuer that does not answer at start does not stop the server: it refuses every
token (401) and /readyz reports "jwks" not ready until the issuer answers.

With --tls-cert and --tls-key the API serves TLS, HTTP/2 (h2) and HTTP/1.1 over it; the files are
looked at every few seconds and a renewed pair is served without a restart (a pair that does not
load is logged and the previous one kept). Without them it serves plain HTTP/1.1 and h2c.

The development JWT secret (used when FSCTL_JWT_SECRET is unset) and the development admin token
of docker-compose.yml are refused unless --addr is a loopback address (127.0.0.1, ::1, localhost)
or --insecure-dev-secrets says the instance is a test: anyone who can reach the port could mint
buyers' tokens or pause the sale with them.`,
		Example: `  fsctl serve --addr 127.0.0.1:8080               # both roles against the local stack (the development secret: loopback only)
  fsctl serve --role api --addr 127.0.0.1:8081    # a second API instance
  fsctl serve --role reservation --grpc-addr 127.0.0.1:9091 & fsctl serve --addr 127.0.0.1:8080 --reservation-addr 127.0.0.1:9091
  fsctl serve --addr 127.0.0.1:8080 --admin-token "$OPS_TOKEN" --payment-url http://127.0.0.1:8090
  FSCTL_JWT_SECRET=... fsctl serve --redis-url redis://cache:6379/0 --kafka-brokers k1:9092,k2:9092   # beyond loopback: a real secret`,
		RunE: func(cmd *cobra.Command, _ []string) error { return serve(cmd, o) },
	}
	o.bind(cmd.Flags())
	return cmd
}

func serve(cmd *cobra.Command, o serveOptions) error {
	log, err := newLogger(os.Stderr, o.logFormat, o.logLevel)
	if err != nil {
		return usageError(err)
	}
	if err := server.CheckRoles(o.roles); err != nil {
		return settingError(err)
	}
	// What the instance was given, as the marks show it: the addresses without their passwords and
	// of each secret only that it is set.
	log.Info("starting", append([]any{"roles", strings.Join(o.roles, ",")}, loggedFlags(cmd.Flags())...)...)
	if slices.Contains(o.roles, server.RoleReservation) {
		return serveReservation(cmd, o, log)
	}
	s := o.settings()
	if err := s.Validate(); err != nil {
		return settingError(err)
	}
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(o.gcPercent)
	}
	jwks, err := o.jwks.config(cmd, log)
	if err != nil {
		return usageError(err)
	}
	if o.jwtSecret == devJWTSecret && slices.Contains(o.roles, server.RoleAPI) { // only the API verifies buyers' tokens
		log.Warn("using the built-in development JWT secret; set " + envJWTSecret + " for anything real")
	}
	cfg, err := o.serverConfig()
	if err != nil {
		return settingError(err)
	}
	tp, err := o.trace.setup(cmd.Context(), "fsctl-checkout", cfg.Version, log)
	if err != nil {
		return err
	}
	defer flushTraces(tp, log)
	if err := armCrashAfterReserve(&cfg, log); err != nil {
		return err
	}
	kc, err := o.endpoints.kafkaConn(cmd.ErrOrStderr(), nil)
	if err != nil {
		return err
	}
	app, err := server.Open(cmd.Context(), server.AppConfig{
		Server: cfg, RedisURL: o.endpoints.redisURL, PostgresURL: o.endpoints.postgresURL,
		Kafka: kc, JWTSecret: []byte(o.jwtSecret), JWKS: jwks, Partitions: o.partitions, StartWait: o.startWait, ConsumerSession: o.session, IdemTTL: o.idemTTL,
		API: slices.Contains(o.roles, server.RoleAPI), Consumer: slices.Contains(o.roles, server.RoleConsumer),
		Migrate:    o.migrate,
		PaymentURL: o.paymentURL, Breaker: o.breaker, Lifecycle: s.LifecycleConfig(), Workers: o.workers,
		RoomRedisURL: o.roomRedisURL, RoomSecret: []byte(o.roomSecret), DebugAddr: o.debugAddr, ReservationAddr: o.reservationAddr,
		RedisBatch: cmp.Or(o.redisBatch, -1), Tracer: tp.TracerProvider(),
		ReadModel: o.readModel, StockTopic: o.stockTopic,
		ReservationSecurity: reservation.Security{CAFile: o.grpcSec.CAFile, Token: o.grpcSec.Token},
	}, log)
	if err != nil {
		return err
	}
	defer app.Close()
	return app.Run(cmd.Context(), nil)
}

// serverConfig is the server's Config from the flags (Settings.Validate passed), checked by its
// Validate.
func (o serveOptions) serverConfig() (server.Config, error) {
	cfg := server.DefaultConfig()
	soldOut, _ := server.ParseSoldOutMode(o.soldOut) // Settings.Validate refused a bad one
	build := currentBuild()
	cfg.Addr, cfg.MaxConns, cfg.ShedConns, cfg.Version, cfg.Commit = o.addr, o.maxConns, o.shedConns, build.Version, build.Commit
	cfg.AdminToken, cfg.SoldOut, cfg.ClientIPHeader, cfg.PurchaseDeadline = o.adminToken, soldOut, o.clientIP, o.deadline
	cfg.TLSCertFile, cfg.TLSKeyFile, cfg.MetricsAddr = o.tlsCert, o.tlsKey, o.metricsAddr
	return cfg, cfg.Validate()
}

// armCrashAfterReserve arms the game day's fault the environment asks for (server.EnvCrashAfterReserve).
func armCrashAfterReserve(cfg *server.Config, log *slog.Logger) error {
	n, set, err := server.CrashAfterReserveFromEnv()
	if err != nil || !set {
		return err
	}
	cfg.CrashAfterReserve = n
	log.Warn("game day fault armed: this process exits after its Nth fresh reservation", "n", n)
	return nil
}
