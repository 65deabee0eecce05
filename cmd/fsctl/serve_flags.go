package main

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/fsctl/fsctl/internal/checkout/auth"
	"github.com/fsctl/fsctl/internal/checkout/events"
	"github.com/fsctl/fsctl/internal/checkout/ingest"
	"github.com/fsctl/fsctl/internal/checkout/lifecycle"
	"github.com/fsctl/fsctl/internal/checkout/payment"
	"github.com/fsctl/fsctl/internal/checkout/reservation"
	"github.com/fsctl/fsctl/internal/checkout/stock"
	"github.com/fsctl/fsctl/internal/harness/stack"
	"github.com/fsctl/fsctl/server"
)

type serveOptions struct {
	endpoints     endpointFlags
	addr          string
	roles         []string
	jwtSecret     string
	jwks          jwksFlags
	maxConns      int
	shedConns     int
	deadline      time.Duration
	publishLinger time.Duration
	partitions    int
	startWait     time.Duration
	session       time.Duration
	idemTTL       time.Duration
	migrate       bool
	adminToken    string
	paymentURL    string
	soldOut       string
	workers       bool
	lifecycle     lifecycle.Config
	breaker       payment.BreakerConfig
	roomRedisURL  string
	roomSecret    string
	clientIP      string
	debugAddr     string
	logFormat     string
	logLevel      string
	gcPercent     int
	redisBatch    int
	tlsCert       string
	tlsKey        string
	devSecrets    bool
	metricsAddr   string
	readModel     string
	stockTopic    string
	trace         traceFlags

	// grpcAddr is where --role reservation serves; reservationAddr, when set, is the reservation
	// service the api role reserves through.
	grpcAddr, reservationAddr string
	// grpcSec is the reservation port's TLS and token: the service's certificate and key, the
	// client's CA, the token both sides share.
	grpcSec reservation.Security
}

// bind registers serve's flags on fs.
func (o *serveOptions) bind(fs *pflag.FlagSet) {
	o.endpoints.bind(fs, true)
	d := server.DefaultConfig()
	fs.StringVar(&o.addr, "addr", d.Addr, "listen address of the API")
	fs.StringSliceVar(&o.roles, "role", []string{"api", "consumer"}, "roles to run: api, consumer; or reservation alone (the gRPC reservation service on --grpc-addr, needing only Redis)")
	fs.StringVar(&o.grpcAddr, "grpc-addr", ":9091", "listen address of the gRPC reservation service (--role reservation)")
	fs.StringVar(&o.reservationAddr, "reservation-addr", os.Getenv(envReservationAddr), "host:port of a reservation service (fsctl serve --role reservation) the api role reserves through over gRPC; empty runs the reserve scripts in-process (env "+envReservationAddr+")")
	secretString(fs, &o.grpcSec.Token, "grpc-token", envGRPCToken, "shared secret of the reservation service: --role reservation refuses calls without it (its health service excepted), the api role sends it")
	fs.StringVar(&o.grpcSec.CertFile, "grpc-tls-cert", "", "TLS certificate (PEM) of the reservation service; with --grpc-tls-key it speaks TLS only (--role reservation)")
	fs.StringVar(&o.grpcSec.KeyFile, "grpc-tls-key", "", "TLS key (PEM) of --grpc-tls-cert (--role reservation)")
	fs.StringVar(&o.grpcSec.CAFile, "reservation-ca", "", "CA certificate (PEM) the api role verifies the reservation service's TLS certificate against; with it the api role speaks TLS to --reservation-addr")
	bindJWTSecret(fs, &o.jwtSecret, "HS256 secret of buyers' tokens")
	o.jwks.bind(fs)
	fs.IntVar(&o.maxConns, "max-conns", d.MaxConns, "most client connections the checkout serves at once; beyond them a connection is shed (--shed-conns); 0 serves every one. Keep --max-conns plus --shed-conns below the open-file limit (ulimit -n)")
	fs.IntVar(&o.shedConns, "shed-conns", d.ShedConns, "most connections beyond --max-conns that still get an answer, at once: 503 OVERLOADED with Retry-After and Connection: close (GET /healthz answers 200 there, so a liveness probe does not fail because the instance is busy); beyond those a connection is closed unanswered")
	fs.DurationVar(&o.deadline, "purchase-deadline", d.PurchaseDeadline, "the longest a buyer waits for a purchase's answer: past it (a store frozen, a broker that does not acknowledge) the buyer hears 503 UNAVAILABLE with Retry-After while the purchase goes on, and a retry with the same Idempotency-Key learns how it ended; above the publish timeout (5s), below buyers' own timeouts; 0 turns it off")
	fs.DurationVar(&o.publishLinger, "publish-linger", 0, "ignored")
	_ = fs.MarkDeprecated("publish-linger", "concurrent publishes share produce requests without a timer now; the flag has no effect")
	fs.IntVar(&o.partitions, "partitions", 6, "partitions of the orders topic when the server creates it")
	fs.DurationVar(&o.idemTTL, "idempotency-ttl", stock.DefaultIdemTTL, "how long a purchase's answer is kept under its Idempotency-Key: a retry within it gets the same answer; each record takes a few hundred bytes of Redis, so Redis holds about (purchases per second × this) of them")
	fs.DurationVar(&o.session, "consumer-session", ingest.DefaultSessionTimeout, "the order consumer's Kafka group session: a crashed instance holds its partitions, and a rebalance waits for it, this long (the broker's group.min.session.timeout.ms is the floor, 6s by default)")
	fs.DurationVar(&o.startWait, "start-wait", 30*time.Second, "at start, how long to wait for each of Redis, PostgreSQL and Kafka while it does not answer yet (restarting, a cluster recovering) before giving up; a wrong kind of Redis address fails at once")
	fs.DurationVar(&o.startWait, "redis-wait", 30*time.Second, "the old name of --start-wait")
	_ = fs.MarkDeprecated("redis-wait", "use --start-wait, which waits for PostgreSQL and Kafka too")
	fs.BoolVar(&o.migrate, "migrate", true, "apply database migrations at start")
	secretString(fs, &o.adminToken, "admin-token", envAdminToken, "operator token of /admin/v1; empty turns the admin API off")
	addressString(fs, &o.paymentURL, "payment-url", os.Getenv(envPaymentURL), "payment provider base URL; empty runs the bundled fake in-process (env "+envPaymentURL+")")
	fs.StringVar(&o.soldOut, "sold-out-flag", string(d.SoldOut), "local sold-out flag: off, verify (the reserve script on the buyer's home shard only, no borrowing: every answer stays the script's own) or trust (answer SOLD_OUT from memory)")
	fs.BoolVar(&o.workers, "workers", true, "run the expiry job, orphaned-hold sweeper and payment claim resolver in this process")
	lc := lifecycle.DefaultConfig()
	fs.DurationVar(&o.lifecycle.PaymentTimeout, "payment-timeout", lc.PaymentTimeout, "timeout of one payment provider call; keep it well below the sale's hold TTL")
	fs.DurationVar(&o.lifecycle.ExpiryInterval, "expiry-interval", lc.ExpiryInterval, "how often the expiry job looks for holds past their TTL")
	fs.DurationVar(&o.lifecycle.SweepInterval, "sweep-interval", lc.SweepInterval, "how often the orphaned-hold sweeper runs")
	fs.DurationVar(&o.lifecycle.OrphanAge, "orphan-age", lc.OrphanAge, "age after which a hold with no order in PostgreSQL is re-published")
	fs.DurationVar(&o.lifecycle.ClaimTimeout, "claim-timeout", lc.ClaimTimeout, "age after which an unfinished payment is settled with the provider")
	fs.DurationVar(&o.lifecycle.ClaimAge, "sale-claim-age", lc.ClaimAge, "age after which a per-sale limit's claim that no live order holds is given back (a crash left it); keep it well above the longest purchase (publish timeout 5s + 2s)")
	addressString(fs, &o.roomRedisURL, "room-redis-url", os.Getenv(envRoomRedisURL), "Redis of the waiting rooms; empty uses --redis-url (env "+envRoomRedisURL+")")
	secretString(fs, &o.roomSecret, "room-secret", envRoomSecret, "secret of admission tokens and proof-of-work challenges, the same on every instance; empty derives one from the JWT secret")
	fs.StringVar(&o.clientIP, "client-ip-header", "", "header a trusted proxy puts the client address in (e.g. X-Forwarded-For), for per-address rate limits")
	fs.IntVar(&o.redisBatch, "redis-batch", stock.DefaultBatchMax, "most commands of concurrent purchases sent to Redis in one pipeline (whatever arrives while one is in flight goes in the next; the reserves of one stock shard in it go as one script call); 0 sends each alone")
	fs.IntVar(&o.gcPercent, "gc-percent", defaultGCPercent, "Go's GC target (GOGC) for the server: heap growth allowed between collections, in percent; the GOGC environment variable, when set, wins")
	fs.StringVar(&o.logFormat, "log-format", "text", "log lines as text (for people) or json (one object a line, for a log pipeline)")
	fs.StringVar(&o.logLevel, "log-level", "info", "the least level logged: debug, info, warn or error (a purchase that goes well logs nothing)")
	fs.StringVar(&o.metricsAddr, "metrics-addr", "", "serve /metrics (with /healthz and /readyz for probes) on this address too, e.g. :9090; with it set, --addr no longer answers /metrics, and an instance of the consumer role alone can be scraped and probed")
	fs.StringVar(&o.readModel, "read-model", server.ReadModelEvents, "where GET /api/v1/sales/{sale} takes its stock numbers: events (the consumer and the jobs publish a snapshot of each item they change to --stock-topic and every API instance serves from it, so the stock Redis sees no more reads with more instances; falls back to poll while Kafka is away) or poll (each instance reads Redis at most every 500ms)")
	fs.StringVar(&o.stockTopic, "stock-topic", events.DefaultStockTopic, "compacted Kafka topic of stock snapshots (--read-model events); created when missing")
	o.trace.bind(fs)
	fs.StringVar(&o.debugAddr, "debug-addr", "", "serve Go's profiler (pprof) on this address, e.g. 127.0.0.1:6060; off when empty (keep it private)")
	fs.StringVar(&o.tlsCert, "tls-cert", "", "serve TLS with this certificate (PEM, the chain after the leaf), with --tls-key; re-read when the file changes")
	fs.StringVar(&o.tlsKey, "tls-key", "", "private key (PEM) of --tls-cert")
	fs.BoolVar(&o.devSecrets, "insecure-dev-secrets", false, "allow the development JWT secret and admin token on an address beyond loopback (a test or a container published on loopback only)")
	fs.Uint32Var(&o.breaker.ConsecutiveFailures, "breaker-failures", 5, "consecutive payment failures that open the circuit breaker")
	fs.DurationVar(&o.breaker.OpenTimeout, "breaker-open", 5*time.Second, "how long the open breaker refuses payments before trying one")
}

// settings are the flags the server's Validate checks.
func (o serveOptions) settings() server.Settings {
	return server.Settings{Roles: o.roles, Addr: o.addr, ReadModel: o.readModel, SoldOut: o.soldOut, Lifecycle: o.lifecycle,
		IdemTTL: o.idemTTL, TLSCertFile: o.tlsCert, TLSKeyFile: o.tlsKey, JWTSecret: o.jwtSecret, AdminToken: o.adminToken,
		InsecureDevSecrets: o.devSecrets}
}

// settingError gives a setting the server refuses the exit status serve has always given it: a
// usage error (exit 2) where the server says the command line is wrong on its face, else a failed
// run (exit 1).
func settingError(err error) error {
	if se, ok := errors.AsType[*server.SettingError](err); ok && se.Usage {
		return usageError(err)
	}
	return err
}

// The variables of an identity provider's tokens: serve verifies against FSCTL_JWKS_URL (trusting
// FSCTL_JWKS_CA), token and the bundled profile sign with the key file FSCTL_JWT_KEY names, and
// both put or check FSCTL_JWT_ISSUER and FSCTL_JWT_AUDIENCE. fsctl stack env sets all five on a
// secure stack.
const (
	envJWKSURL     = stack.EnvJWKSURL
	envJWKSCA      = stack.EnvJWKSCA
	envJWTIssuer   = stack.EnvJWTIssuer
	envJWTAudience = stack.EnvJWTAudience
	envJWTKey      = stack.EnvJWTKey
)

// jwksFlags are serve's identity provider: where its JWKS is and what its tokens must say.
type jwksFlags struct {
	url, issuer, audience, ca string
}

func (j *jwksFlags) bind(fs *pflag.FlagSet) {
	addressString(fs, &j.url, "jwks-url", os.Getenv(envJWKSURL), "verify buyers' tokens (RS256, ES256, EdDSA) against this identity provider's JWKS instead of the HS256 secret; https, or http on loopback (env "+envJWKSURL+")")
	fs.StringVar(&j.issuer, "jwt-issuer", os.Getenv(envJWTIssuer), "with --jwks-url: the iss every token must carry (env "+envJWTIssuer+")")
	fs.StringVar(&j.audience, "jwt-audience", os.Getenv(envJWTAudience), "with --jwks-url: the aud every token must include (env "+envJWTAudience+")")
	fs.StringVar(&j.ca, "jwks-ca", os.Getenv(envJWKSCA), "with --jwks-url: the CA certificate (PEM) that signed the identity provider's HTTPS certificate, trusted instead of the system's (env "+envJWKSCA+")")
}

// config is the server's JWKS set-up; nil keeps HS256. The issuer, audience and CA mean nothing
// without a JWKS: given on the command line they are a usage error, left from the environment a
// warning (a shell that unset only FSCTL_JWKS_URL, or a game day pinning its own secret).
func (j jwksFlags) config(cmd *cobra.Command, log *slog.Logger) (*auth.JWKSConfig, error) {
	if j.url == "" {
		for _, name := range []string{"jwt-issuer", "jwt-audience", "jwks-ca"} {
			if cmd.Flags().Changed(name) {
				return nil, fmt.Errorf("--%s goes with --jwks-url (env %s): HS256 tokens are checked against the secret only", name, envJWKSURL)
			}
		}
		if j.issuer != "" || j.audience != "" || j.ca != "" {
			log.Warn("no --jwks-url: buyers' tokens are HS256, and " + envJWTIssuer + ", " + envJWTAudience + " and " + envJWKSCA + " are not used")
		}
		return nil, nil
	}
	jc := &auth.JWKSConfig{URL: j.url, Issuer: j.issuer, Audience: j.audience, CAFile: j.ca}
	return jc, jc.Validate()
}
