package preflight

import (
	"context"
	"crypto/x509"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/fsctl/fsctl/internal/contract/finding"
	"github.com/fsctl/fsctl/internal/harness/stack"
	"github.com/fsctl/fsctl/internal/harness/testenv"
	"github.com/fsctl/fsctl/internal/platform/kafkaconn"
)

// TestPostureJudged: plaintext, an unverified certificate, no login and a certificate near its end
// each warn, naming what is missing; TLS verified with a login passes.
func TestPostureJudged(t *testing.T) {
	soon := &x509.Certificate{NotAfter: time.Now().Add(3 * 24 * time.Hour)}
	later := &x509.Certificate{NotAfter: time.Now().Add(60 * 24 * time.Hour)}
	for _, c := range []struct {
		name                   string
		tlsOn, verified, login bool
		cert                   *x509.Certificate
		want                   finding.Status
		says                   string
	}{
		{"secured", true, true, true, later, finding.Pass, "certificate valid until"},
		{"plaintext", false, false, true, nil, finding.Warn, "plaintext"},
		{"unverified", true, false, true, later, finding.Warn, "without checking"},
		{"anonymous", true, true, false, later, finding.Warn, "no login"},
		{"expiring", true, true, true, soon, finding.Warn, "expires in"},
	} {
		r := judge(posture("redis"), c.tlsOn, c.verified, c.login, "", c.cert, "fix it")
		if r.Status != c.want || !strings.Contains(r.Detail, c.says) || (c.want == finding.Warn) != (r.Fix != "") {
			t.Errorf("%s: %s %q fix %q, want %s saying %q", c.name, r.Status, r.Detail, r.Fix, c.want, c.says)
		}
	}
}

// TestPostureOfTheSecureStack: every service of the secure stack passes, its certificates read
// over TLS; the plain stack's warn.
func TestPostureOfTheSecureStack(t *testing.T) {
	cfg, e := testenv.SecureStack(t)
	t.Setenv("PGPASSFILE", e.Credentials.PGPassFile)
	kpw, err := stack.Secrets{Dir: cfg.Dir}.Password("kafka")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	secured := &env{cfg: Config{
		RedisURL: e.RedisURL + "?ca=" + e.Credentials.CA, PostgresURL: e.PostgresURL,
		Kafka: kafkaconn.Conn{Brokers: e.KafkaBrokers, TLS: kafkaconn.TLS{CA: e.Credentials.CA},
			SASL: kafkaconn.SASL{Mechanism: kafkaconn.ScramSHA512, User: stack.SecureUser, Password: kpw}},
	}}
	t.Setenv("FSCTL_REDIS_USER", stack.SecureUser)
	t.Setenv("FSCTL_REDIS_PASSWORD", "set")
	for _, r := range []finding.Finding{redisPosture(ctx, secured), postgresPosture(ctx, secured), kafkaPosture(ctx, secured)} {
		if r.Status != finding.Pass || !strings.Contains(r.Detail, "certificate valid until") {
			t.Errorf("%s: %s %q, want a pass that read the certificate", r.Check, r.Status, r.Detail)
		}
	}
	plain := &env{cfg: Config{RedisURL: "redis://127.0.0.1:16379/0", PostgresURL: "postgres://fsctl@127.0.0.1:15432/fsctl?sslmode=disable",
		Kafka: kafkaconn.Conn{Brokers: []string{"127.0.0.1:19092"}}}}
	t.Setenv("FSCTL_REDIS_USER", "")
	t.Setenv("FSCTL_REDIS_PASSWORD", "")
	t.Setenv("PGPASSFILE", "/dev/null")
	for _, r := range []finding.Finding{redisPosture(ctx, plain), postgresPosture(ctx, plain), kafkaPosture(ctx, plain)} {
		if r.Status != finding.Warn || !strings.Contains(r.Detail, "plaintext") || !strings.Contains(r.Detail, "no login") {
			t.Errorf("plain %s: %s %q, want a warning naming plaintext and no login", r.Check, r.Status, r.Detail)
		}
	}
}

// TestRedisRightsNameTheMissingOne: an ACL user without scripting fails the check naming EVALSHA;
// the secure stack's checkout user passes.
func TestRedisRightsNameTheMissingOne(t *testing.T) {
	cfg, e := testenv.SecureStack(t)
	sec := stack.Secrets{Dir: cfg.Dir}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	client := func(user, pw string) *redis.Client {
		o, err := redis.ParseURL(e.RedisURL)
		if err != nil {
			t.Fatal(err)
		}
		pool := x509.NewCertPool()
		pem, _ := os.ReadFile(e.Credentials.CA)
		pool.AppendCertsFromPEM(pem)
		o.TLSConfig.RootCAs, o.Username, o.Password = pool, user, pw
		c := redis.NewClient(o)
		t.Cleanup(func() { _ = c.Close() })
		return c
	}
	admin, err := sec.Password("redis-admin")
	if err != nil {
		t.Fatal(err)
	}
	user := "fsctl-test-noscript-" + testenv.ID(t, "u")
	if err := client("fsctl-admin", admin).Do(ctx, "ACL", "SETUSER", user, "on", ">pw-of-the-test", "~{fs:*", "+@read", "+@write").Err(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = client("fsctl-admin", admin).Do(context.Background(), "ACL", "DELUSER", user).Err() })
	r := redisRights(ctx, &env{cfg: Config{SaleID: "rights"}, rdb: client(user, "pw-of-the-test")})
	if r.Status != finding.Fail || !strings.Contains(r.Detail, "EVALSHA") || !strings.Contains(r.Fix, "EVALSHA") {
		t.Errorf("a user without scripting: %s %q fix %q, want a failure naming EVALSHA", r.Status, r.Detail, r.Fix)
	}
	pw, _ := sec.Password("redis")
	if r := redisRights(ctx, &env{cfg: Config{SaleID: "rights"}, rdb: client(stack.SecureUser, pw)}); r.Status != finding.Pass {
		t.Errorf("the checkout's user: %s %q", r.Status, r.Detail)
	}
}
