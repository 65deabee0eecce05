package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/fsctl/fsctl/internal/checkout/stock"
	"github.com/fsctl/fsctl/internal/harness/stack"
	"github.com/fsctl/fsctl/internal/harness/testenv"
	"github.com/fsctl/fsctl/internal/platform/kafkaconn"
	"github.com/fsctl/fsctl/internal/platform/redisconn"
)

// TestRefusedKafkaChangesNothing: on the secure stack, a demo whose Kafka login is refused or whose
// CA is not the brokers' stops on one line naming the broker and the fix, exit 1, before its reset
// touches the sale: the stock counter and the sale's row are as they were. fsctl serve stops on
// the same refusal at once instead of waiting --start-wait for a broker that will not change its
// mind.
func TestRefusedKafkaChangesNothing(t *testing.T) {
	cfg, e := testenv.UseSecureStack(t)
	kafkaPW, err := stack.Secrets{Dir: cfg.Dir}.Password("kafka")
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	id := "refused-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	file := filepath.Join(t.TempDir(), "sale.yaml")
	if err := os.WriteFile(file, []byte("id: "+id+"\nname: refused\nopensAt: 2026-01-01T00:00:00Z\nitems:\n  - {id: console, name: Console, quantity: 10}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, code, err := runCLI(t, "sale", "create", "-f", file); code != 0 {
		t.Fatalf("sale create on the secure stack: exit %d: %v", code, err)
	}
	rdb, err := redisconn.Open(e.RedisURL, redisconn.Tune{})
	if err != nil {
		t.Fatal(err)
	}
	defer rdb.Close()
	key := stock.ShardKeys(id, "console", 0, 1).Stock()
	if err := rdb.Decr(ctx, key).Err(); err != nil { // a unit sold: the reset would put it back
		t.Fatal(err)
	}
	db, err := pgx.Connect(ctx, e.PostgresURL)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close(context.Background())
	state := func() string {
		t.Helper()
		var opens time.Time
		if err := db.QueryRow(ctx, "SELECT opens_at FROM sales WHERE id = $1", id).Scan(&opens); err != nil {
			t.Fatal(err)
		}
		return fmt.Sprintf("stock %s, opens %s", rdb.Get(ctx, key).Val(), opens.UTC().Format(time.RFC3339))
	}
	before := state()

	other := testenv.NewCA(t, "not the brokers' CA")
	for _, c := range []struct {
		name, env, value, says string
	}{
		{"a wrong password", kafkaconn.EnvPassword, "wrong", `SASL login refused (scram-sha-512 as "fsctl")`},
		{"another CA", kafkaconn.EnvCA, other.File, "does not trust: give --kafka-ca"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Setenv(c.env, c.value)
			for _, args := range [][]string{
				{"demo", "-f", file, "--buyers", "10"},
				{"serve", "--addr", "127.0.0.1:0", "--start-wait", "2m"},
			} {
				runCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
				_, code, err := runCLIContext(runCtx, args...)
				stopped := runCtx.Err() == nil
				cancel()
				first, _, _ := strings.Cut(fmt.Sprint(err), "\n")
				if code != exitFailed || !stopped || !strings.Contains(first, "kafka "+strings.Join(e.KafkaBrokers, ",")+": ") ||
					!strings.Contains(first, c.says) || strings.Contains(fmt.Sprint(err), kafkaPW) {
					t.Errorf("%s: exit %d, stopped by itself %v: %v\nwant exit 1 at once, one line naming the broker and %q", args[0], code, stopped, first, c.says)
				}
			}
		})
	}
	if after := state(); after != before {
		t.Errorf("a demo that could not reach Kafka changed the sale: %s, was %s", after, before)
	}
}

// TestRefusedCertificatesNameTheFix: a real Redis presenting a certificate that expired, or one a
// CA the client was not given signed, fails the command (exit 1) on one line naming the service,
// what is wrong with the certificate and where to fix it.
func TestRefusedCertificatesNameTheFix(t *testing.T) {
	ca := testenv.NewCA(t, "redis")
	tlsRedis := func(cert, key string) string {
		port := strconv.Itoa(loopbackPorts(t, 1)[0])
		testenv.PrivateRedisNode(t, "--tls-port", port, "--tls-cert-file", cert, "--tls-key-file", key, "--tls-auth-clients", "no")
		return "127.0.0.1:" + port
	}
	old, valid := tlsRedis(ca.Expired(t, "expired", "127.0.0.1")), tlsRedis(ca.Server(t, "valid", "127.0.0.1"))
	expired := "rediss://" + old + "/0?ca=" + ca.File
	other := testenv.NewCA(t, "another")
	for url, says := range map[string]string{
		expired: "redis " + old + ": TLS: the certificate has expired or is not valid yet (current time",
		"rediss://" + valid + "/0?ca=" + other.File: "redis " + valid + ": TLS: the certificate is signed by an authority this client does not trust; give the CA file that signed it (?ca=FILE",
	} {
		_, code, err := runCLI(t, "sale", "show", "--sale", "any", "--redis-url", url)
		first, _, _ := strings.Cut(fmt.Sprint(err), "\n")
		if code != exitFailed || !strings.Contains(first, says) {
			t.Errorf("%s: exit %d: %s\nwant exit 1 and %q", url, code, first, says)
		}
	}
	_, _, err := runCLI(t, "sale", "show", "--sale", "any", "--redis-url", expired)
	if !strings.Contains(fmt.Sprint(err), "renew it (the local stack: fsctl stack up --secure --renew)") {
		t.Errorf("an expired certificate: %v, want the fix: renew it", err)
	}
}
