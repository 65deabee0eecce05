package stack_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/redis/go-redis/v9"

	"github.com/fsctl/fsctl/internal/harness/stack"
	"github.com/fsctl/fsctl/internal/harness/testenv"
	"github.com/fsctl/fsctl/internal/platform/kafkaconn"
)

// TestSecureStackPosture holds the secure stack to production posture: every service refuses
// plaintext, an anonymous or wrong login and a client that does not trust the stack's CA, and the
// checkout's Redis user has no rights beyond the sale's keys.
func TestSecureStackPosture(t *testing.T) {
	cfg, e := testenv.SecureStack(t)
	sec := stack.Secrets{Dir: cfg.Dir}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	pool := x509.NewCertPool()
	pem, err := os.ReadFile(e.Credentials.CA)
	if err != nil || !pool.AppendCertsFromPEM(pem) {
		t.Fatalf("the stack's CA: %v", err)
	}
	other := testenv.NewCA(t, "not the stack's CA")
	redisAddr := strings.TrimSuffix(strings.TrimPrefix(e.RedisURL, "rediss://"), "/0")
	redisPW, err := sec.Password("redis")
	if err != nil {
		t.Fatal(err)
	}

	t.Run("redis", func(t *testing.T) {
		try := func(o *redis.Options, args ...any) error {
			o.Addr, o.MaxRetries, o.DialTimeout = redisAddr, -1, 2*time.Second
			c := redis.NewClient(o)
			defer c.Close()
			return c.Do(ctx, args...).Err()
		}
		trusted := &tls.Config{RootCAs: pool}
		for name, c := range map[string]struct {
			o    *redis.Options
			args []any
			want string
		}{
			"plaintext":           {&redis.Options{}, []any{"PING"}, ""},
			"another CA":          {&redis.Options{TLSConfig: &tls.Config{RootCAs: other.Pool()}}, []any{"PING"}, "certificate"},
			"the default user":    {&redis.Options{TLSConfig: trusted}, []any{"PING"}, "NOAUTH"},
			"a wrong password":    {&redis.Options{TLSConfig: trusted, Username: stack.SecureUser, Password: "wrong"}, []any{"PING"}, "WRONGPASS"},
			"FLUSHALL":            {&redis.Options{TLSConfig: trusted, Username: stack.SecureUser, Password: redisPW}, []any{"FLUSHALL"}, "NOPERM"},
			"CONFIG SET":          {&redis.Options{TLSConfig: trusted, Username: stack.SecureUser, Password: redisPW}, []any{"CONFIG", "SET", "appendonly", "no"}, "NOPERM"},
			"a key of no sale":    {&redis.Options{TLSConfig: trusted, Username: stack.SecureUser, Password: redisPW}, []any{"SET", "not-a-sale-key", "1"}, "NOPERM"},
			"the sale's own keys": {&redis.Options{TLSConfig: trusted, Username: stack.SecureUser, Password: redisPW}, []any{"SET", "{fs:posture:item}:stock", "1"}, "OK"},
		} {
			err := try(c.o, c.args...)
			switch {
			case c.want == "OK" && err != nil:
				t.Errorf("%s: %v, want it allowed", name, err)
			case c.want != "OK" && err == nil:
				t.Errorf("%s: allowed, want it refused", name)
			case c.want != "OK" && !strings.Contains(err.Error(), c.want):
				t.Errorf("%s: %v, want %s", name, err, c.want)
			}
		}
	})

	t.Run("postgres", func(t *testing.T) {
		t.Setenv("PGPASSFILE", e.Credentials.PGPassFile)
		conn, err := pgx.Connect(ctx, e.PostgresURL)
		if err != nil {
			t.Fatalf("verify-full with the pgpass file: %v", err)
		}
		var ssl bool
		if err := conn.QueryRow(ctx, "SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()").Scan(&ssl); err != nil || !ssl {
			t.Errorf("the connection is not TLS: %v %v", ssl, err)
		}
		conn.Close(ctx)
		plain := strings.Replace(e.PostgresURL, "sslmode=verify-full", "sslmode=disable", 1)
		wrong := strings.Replace(e.PostgresURL, "fsctl@", "fsctl:wrong@", 1)
		anotherCA := strings.Replace(e.PostgresURL, e.Credentials.CA, other.File, 1)
		for name, c := range map[string]struct{ url, want string }{
			"plaintext": {plain, "no encryption"}, "a wrong password": {wrong, "password authentication failed"}, "another CA": {anotherCA, "certificate"},
		} {
			conn, err := pgx.Connect(ctx, c.url)
			if err == nil {
				conn.Close(ctx)
				t.Errorf("%s: connected, want refused", name)
			} else if !strings.Contains(err.Error(), c.want) {
				t.Errorf("%s: %v, want %q", name, err, c.want)
			}
		}
	})

	t.Run("kafka", func(t *testing.T) {
		kpw, err := sec.Password("kafka")
		if err != nil {
			t.Fatal(err)
		}
		good := kafkaconn.Conn{Brokers: e.KafkaBrokers, TLS: kafkaconn.TLS{Enabled: true, CA: e.Credentials.CA},
			SASL: kafkaconn.SASL{Mechanism: kafkaconn.ScramSHA512, User: stack.SecureUser, Password: kpw}}
		metadata := func(c kafkaconn.Conn) error {
			d, err := c.Dialer(3 * time.Second)
			if err != nil {
				return err
			}
			conn, err := d.DialContext(ctx, "tcp", c.Brokers[0])
			if err != nil {
				return c.Explain(err)
			}
			defer conn.Close()
			_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
			_, err = conn.Brokers()
			return c.Explain(err)
		}
		if err := metadata(good); err != nil {
			t.Fatalf("SASL_SSL as %s: %v", stack.SecureUser, err)
		}
		wrongPW, wrongCA, plaintext := good, good, good
		wrongPW.SASL.Password = "wrong"
		wrongCA.TLS.CA = other.File
		plaintext.TLS, plaintext.SASL = kafkaconn.TLS{}, kafkaconn.SASL{}
		for name, c := range map[string]struct {
			conn kafkaconn.Conn
			want string
		}{
			"a wrong password": {wrongPW, "SASL login refused"}, "another CA": {wrongCA, "does not trust"}, "plaintext": {plaintext, ""},
		} {
			err := metadata(c.conn)
			var ke *kafkaconn.Error
			switch {
			case err == nil:
				t.Errorf("%s: allowed, want refused", name)
			case c.want != "" && (!errors.As(err, &ke) || !strings.Contains(err.Error(), c.want)):
				t.Errorf("%s: %v, want one line saying %q", name, err, c.want)
			}
		}
	})

	t.Run("files", func(t *testing.T) {
		for _, f := range []string{e.Credentials.RedisPasswordFile, e.Credentials.KafkaPasswordFile, e.Credentials.PGPassFile, filepath.Join(cfg.Dir, "tls", "server.key")} {
			st, err := os.Stat(f)
			if err != nil || st.Mode().Perm() != 0o600 {
				t.Errorf("%s: %v %v, want 0600", f, st.Mode(), err)
			}
		}
		out := fmt.Sprint(e, *e.Credentials)
		for _, pw := range []string{redisPW} {
			if strings.Contains(out, pw) {
				t.Error("the endpoints hold a password")
			}
		}
	})
}
