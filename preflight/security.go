package preflight

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/redis/go-redis/v9"

	"github.com/fsctl/fsctl/internal/contract/finding"
	"github.com/fsctl/fsctl/internal/platform/redisconn"
)

// expiresSoon is how close to its end a server certificate must be for preflight to warn: the
// secure stack renews its own this long before.
const expiresSoon = 14 * 24 * time.Hour

// checkSecurity: how each service is reached — TLS or plaintext, a login or none, a server
// certificate near its end — and, on fsctl serve, whether its Redis user may run what the
// checkout runs on the sale's keys. A plaintext or anonymous service warns (a local rehearsal
// stack is both); a missing right fails (the first purchase would).
func checkSecurity(ctx context.Context, e *env) []finding.Finding {
	out := []finding.Finding{redisPosture(ctx, e), postgresPosture(ctx, e), kafkaPosture(ctx, e)}
	if e.bundled != nil && e.rdb != nil {
		out = append(out, redisRights(ctx, e))
	}
	return out
}

func posture(service string) finding.Finding {
	return finding.Finding{Group: "security", Check: service + " transport and login", Status: finding.Pass}
}

// judge fills r from what the connection lacks; cert is the server certificate's (nil without
// TLS or when it could not be read).
func judge(r finding.Finding, tlsOn, verified, login bool, who string, cert *x509.Certificate, fix string) finding.Finding {
	var have, lack []string
	switch {
	case !tlsOn:
		lack = append(lack, "plaintext: anyone on the path reads and changes the traffic")
	case !verified:
		lack = append(lack, "TLS without checking the server's certificate")
	default:
		have = append(have, "TLS, certificate verified")
	}
	if login {
		have = append(have, "logged in"+who)
	} else {
		lack = append(lack, "no login: anyone who reaches it may write")
	}
	if cert != nil {
		left := time.Until(cert.NotAfter)
		have = append(have, "certificate valid until "+cert.NotAfter.UTC().Format(time.DateOnly))
		if left < expiresSoon {
			lack = append(lack, fmt.Sprintf("its certificate expires in %s (%s)", left.Round(time.Hour), cert.NotAfter.UTC().Format(time.DateOnly)))
			fix = "renew the server certificate before the sale (the local stack: fsctl stack up --secure --renew)"
		}
	}
	r.Detail = strings.Join(append(have, lack...), "; ")
	if len(lack) > 0 {
		r.Status, r.Fix = finding.Warn, fix
	}
	return r
}

func redisPosture(ctx context.Context, e *env) finding.Finding {
	r := posture("redis")
	a, err := redisconn.Parse(e.cfg.RedisURL)
	if err != nil {
		r.Status, r.Detail = finding.Skip, err.Error()
		return r
	}
	var cert *x509.Certificate
	verified := a.TLS()
	if cfg := a.TLSConfig(); cfg != nil {
		verified = !cfg.InsecureSkipVerify
		cert = peerCertificate(ctx, a.Nodes()[0], cfg)
	}
	return judge(r, a.TLS(), verified, a.Authenticated(), "", cert,
		"use rediss:// with the server's CA (?ca=FILE or FSCTL_REDIS_CA) and an ACL user (FSCTL_REDIS_USER, FSCTL_REDIS_PASSWORD)")
}

func postgresPosture(ctx context.Context, e *env) finding.Finding {
	r := posture("postgres")
	cfg, err := pgconn.ParseConfig(e.cfg.PostgresURL)
	if err != nil {
		r.Status, r.Detail = finding.Skip, "the URL does not parse"
		return r
	}
	tlsOn := cfg.TLSConfig != nil
	// sslmode=prefer and allow fall back to plaintext: only TLS on every try counts.
	for _, fb := range cfg.Fallbacks {
		tlsOn = tlsOn && fb.TLSConfig != nil
	}
	verified := tlsOn && !cfg.TLSConfig.InsecureSkipVerify
	var cert *x509.Certificate
	if tlsOn {
		cert = postgresCertificate(ctx, e.cfg.PostgresURL)
	}
	return judge(r, tlsOn, verified, cfg.Password != "", " as "+cfg.User, cert,
		"sslmode=verify-full&sslrootcert=FILE in the URL, and a password (PGPASSFILE or PGPASSWORD)")
}

func kafkaPosture(ctx context.Context, e *env) finding.Finding {
	r := posture("kafka")
	k := e.cfg.Kafka
	if len(k.Brokers) == 0 {
		r.Status, r.Detail = finding.Skip, "no brokers given"
		return r
	}
	var cert *x509.Certificate
	if k.TLS.On() {
		if cfg, err := k.TLSConfig(); err == nil {
			cert = peerCertificate(ctx, k.Brokers[0], cfg)
		}
	}
	who := ""
	if k.SASL.Mechanism != "" {
		who = " (" + k.SASL.String() + ")"
	}
	return judge(r, k.TLS.On(), !k.TLS.InsecureSkipVerify, k.SASL.Mechanism != "", who, cert,
		"a SASL_SSL listener: --kafka-tls with --kafka-ca, and --kafka-sasl scram-sha-512 with a user")
}

// peerCertificate is the certificate a TLS server at addr presents, read whether or not it
// verifies (an expired one is what the check is for); nil when nothing answers.
func peerCertificate(ctx context.Context, addr string, cfg *tls.Config) *x509.Certificate {
	c := cfg.Clone()
	c.InsecureSkipVerify = true // read the certificate as it is; the service's own check verifies
	if c.ServerName == "" {
		c.ServerName, _, _ = net.SplitHostPort(addr)
	}
	conn, err := (&tls.Dialer{Config: c}).DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil
	}
	defer conn.Close()
	if certs := conn.(*tls.Conn).ConnectionState().PeerCertificates; len(certs) > 0 {
		return certs[0]
	}
	return nil
}

// postgresCertificate is the certificate of the PostgreSQL server at url, read over a connection
// of its own; nil when none could be made.
func postgresCertificate(ctx context.Context, url string) *x509.Certificate {
	conn, err := pgconn.Connect(ctx, url)
	if err != nil {
		return nil
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if tc, ok := conn.Conn().(*tls.Conn); ok {
		if certs := tc.ConnectionState().PeerCertificates; len(certs) > 0 {
			return certs[0]
		}
	}
	return nil
}

// redisRights runs, as the checkout's Redis user, what a purchase runs on a key of the sale's
// hash tag: EVALSHA (a script that is not there answers NOSCRIPT when the user may run it) and
// EVAL of a read-only script. A NOPERM names the right that is missing.
func redisRights(ctx context.Context, e *env) finding.Finding {
	r := finding.Finding{Group: "security", Check: "redis rights", Status: finding.Pass}
	key := "{fs:" + e.cfg.SaleID + ":preflight}:rights"
	probes := []struct {
		what string
		args []any
		ok   func(error) bool
	}{
		{"EVALSHA", []any{"evalsha", strings.Repeat("0", 40), 1, key}, func(err error) bool { return err == nil || strings.HasPrefix(err.Error(), "NOSCRIPT") }},
		{"EVAL", []any{"eval", "return redis.call('EXISTS', KEYS[1])", 1, key}, func(err error) bool { return err == nil }},
		{"TIME in a script", []any{"eval", "return redis.call('TIME')[1]", 1, key}, func(err error) bool { return err == nil }},
	}
	for _, p := range probes {
		err := e.rdb.Do(ctx, p.args...).Err()
		if p.ok(err) {
			continue
		}
		var rerr redis.Error
		r.Status, r.Detail = finding.Fail, fmt.Sprintf("%s on %s: %v", p.what, key, err)
		if errors.As(err, &rerr) && strings.Contains(err.Error(), "NOPERM") {
			r.Fix = "grant the checkout's ACL user " + p.what + " and the sale's keys: ~fs:* ~{fs:* ~{fs-room:* +@scripting +time (see docs/stack.md, Running against secured services)"
		} else if strings.Contains(err.Error(), "can't run this command") {
			r.Fix = "grant the checkout's ACL user the commands its scripts run (+@read +@write +time)"
		}
		return r
	}
	r.Detail = "EVALSHA, EVAL and TIME allowed on the sale's keys"
	return r
}
