package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"

	"github.com/fsctl/fsctl/internal/checkout/lifecycle"
	"github.com/fsctl/fsctl/internal/checkout/stock"
	"github.com/fsctl/fsctl/internal/contract/sale"
	"github.com/fsctl/fsctl/internal/harness/testenv"
	"github.com/fsctl/fsctl/internal/platform/kafkaconn"
	"github.com/fsctl/fsctl/internal/proof/verify"
	"github.com/fsctl/fsctl/server"
	checkouttest "github.com/fsctl/fsctl/server/servertest"
)

// waitSale is a sale of one item "hot" whose reserves wait for one replica under policy.
func waitSale(quantity int64, policy string) sale.Sale {
	return sale.Sale{OpensAt: time.Now().Add(-time.Minute), PerUserLimit: 1, HoldTTL: 10 * time.Minute,
		WaitReplicas: 1, WaitTimeout: 20 * time.Millisecond, WaitPolicy: policy,
		Items: []sale.Item{{ID: "hot", Quantity: quantity, PriceCents: 100}}}
}

// purchaseAt sends one purchase of item "hot" of saleID to the checkout at base.
func purchaseAt(t *testing.T, base, saleID, token, key string) (int, http.Header, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, base+"/api/v1/sales/"+saleID+"/items/hot/purchase", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Idempotency-Key", key)
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
	if err != nil {
		t.Fatalf("purchase: %v", err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, string(b)
}

// isToldRetry reports whether a purchase answer is the release policy's: 503 UNAVAILABLE with a
// Retry-After, saying that nothing was reserved.
func isToldRetry(code int, h http.Header, body string) bool {
	return code == http.StatusServiceUnavailable && h.Get("Retry-After") != "" &&
		strings.Contains(body, `"error":"UNAVAILABLE"`) && strings.Contains(body, "nothing was reserved")
}

func metricsPage(t *testing.T, base string) string {
	t.Helper()
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

// TestWaitPolicyReleaseTellsBuyersToRetry: the stack's Redis has no replica, so every WAIT is
// short. Under waitPolicy release the buyer is told to retry, the unit is back in stock, nothing
// reached Kafka, and the retry with the same key is a fresh attempt (short again), not a replay.
func TestWaitPolicyReleaseTellsBuyersToRetry(t *testing.T) {
	t.Parallel()
	sl := waitSale(2, sale.WaitPolicyRelease)
	c := checkouttest.Start(t, checkouttest.Options{Sale: &sl})
	for try := range 2 {
		if code, h, body := purchaseAt(t, c.Base, c.Sale.ID, c.Token("w"), "k"); !isToldRetry(code, h, body) {
			t.Fatalf("try %d: %d %v %s, want 503 UNAVAILABLE with Retry-After, nothing reserved", try, code, h, body)
		}
	}
	ctx := context.Background()
	st, err := c.App.Stock.Snapshot(ctx, c.Sale.ID, c.Sale.Items)
	if err != nil {
		t.Fatal(err)
	}
	if st[0].Stock != 2 || st[0].Holds != 0 {
		t.Fatalf("after two released reserves: stock %d holds %d, want 2 and 0", st[0].Stock, st[0].Holds)
	}
	page := metricsPage(t, c.Base)
	for _, want := range []string{`fsctl_redis_wait_short_total{policy="release"} 2`, `fsctl_redis_wait_short_total{policy="count"} 0`,
		`fsctl_holds_released_total{reason="wait_short"} 2`, `fsctl_purchase_outcomes_total{outcome="UNAVAILABLE"} 2`} {
		if !strings.Contains(page, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	if n := sumMetric(page, "fsctl_publish_duration_seconds_count"); n != 0 {
		t.Errorf("%v OrderPlaced published for released reserves, want none", n)
	}
}

// TestWaitPolicyFailover shows what each waitPolicy loses when Redis fails over. A private master
// and a real replica of it (redis-server --replicaof); buyers reserve while the replica
// acknowledges; then the replica stops acknowledging (frozen with SIGSTOP and cut off by the
// master, so it gets none of what follows) and more buyers come; then the master dies, the replica
// is thawed and promoted (REPLICAOF NO ONE), and a checkout is pointed at it. Under count every
// buyer told RESERVED while the replica was cut off has lost the reservation in Redis (the order
// is in PostgreSQL, through Kafka, for reconcile to restore); under release those buyers were told
// to retry instead, nobody told RESERVED lost anything, and their retries with the same key
// reserve on the promoted node. The figures are logged for docs/serve.md (waitPolicy).
func TestWaitPolicyFailover(t *testing.T) {
	for _, policy := range []string{sale.WaitPolicyCount, sale.WaitPolicyRelease} {
		t.Run(policy, func(t *testing.T) {
			t.Parallel()
			waitFailover(t, policy)
		})
	}
}

// told is a buyer and the answer the checkout gave.
type told struct {
	user, key string
	order     uuid.UUID
}

func waitFailover(t *testing.T, policy string) {
	const before, during, quantity = 10, 20, 100
	master := testenv.PrivateRedisNode(t)
	replica := testenv.PrivateRedisReplica(t, master)
	sl := waitSale(quantity, policy)
	c := checkouttest.Start(t, checkouttest.Options{Sale: &sl, RedisURL: master.URL})
	ctx := context.Background()
	mc := redis.NewClient(&redis.Options{Addr: master.Addr})
	defer mc.Close()
	rc := redis.NewClient(&redis.Options{Addr: replica.Addr})
	defer rc.Close()

	var reserved, retry []told
	buy := func(base string, b told) bool {
		code, h, body := purchaseAt(t, base, c.Sale.ID, c.Token(b.user), b.key)
		switch {
		case code == http.StatusAccepted:
			var r struct {
				OrderID string `json:"orderId"`
			}
			if err := json.Unmarshal([]byte(body), &r); err != nil {
				t.Fatalf("%s: %s: %v", b.user, body, err)
			}
			b.order = uuid.MustParse(r.OrderID)
			reserved = append(reserved, b)
			return true
		case isToldRetry(code, h, body):
			retry = append(retry, b)
			return false
		}
		t.Fatalf("%s: %d %s, want 202 or 503 UNAVAILABLE nothing reserved", b.user, code, body)
		return false
	}
	for i := range before {
		if !buy(c.Base, told{user: fmt.Sprintf("b%d", i), key: "k"}) {
			t.Fatalf("buyer %d told to retry while the replica acknowledged", i)
		}
	}
	// The replica stops acknowledging: frozen, and cut off by the master, so what the kernel had
	// buffered for it before the cut it reads when thawed, nothing after.
	if err := replica.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	if err := mc.Do(ctx, "client", "kill", "type", "replica").Err(); err != nil {
		t.Fatal(err)
	}
	for i := before; i < before+during; i++ {
		buy(c.Base, told{user: fmt.Sprintf("b%d", i), key: "k"})
	}
	toldReserved, toldRetry := len(reserved), len(retry)

	// Every buyer told RESERVED has the order in PostgreSQL (Kafka carried it, and the consumer,
	// which checks each hold in Redis, recorded it before the master died): what a failover loses
	// under count is the Redis hold, which reconcile restores (TestFailoverLosesWhatTheReplicaMissed).
	waiting, err := verify.Settle(ctx, 30*time.Second, 100*time.Millisecond, func(ctx context.Context) ([]string, error) {
		for _, b := range reserved {
			if _, err := c.App.Orders.GetOrder(ctx, b.order); err != nil {
				return []string{fmt.Sprintf("order %s not in PostgreSQL: %v", b.order, err)}, nil
			}
		}
		return nil, nil
	})
	if err != nil || len(waiting) > 0 {
		t.Fatalf("orders told RESERVED missing from PostgreSQL: %v %v", waiting, err)
	}

	// The failover: the master dies, the replica is thawed and promoted.
	if err := master.Kill(); err != nil {
		t.Fatal(err)
	}
	if err := replica.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	if err := rc.Do(ctx, "replicaof", "no", "one").Err(); err != nil {
		t.Fatal(err)
	}
	rec, err := stock.New(rc).Inspect(ctx, c.Sale.ID, "hot", 0, 1)
	if err != nil {
		t.Fatal(err)
	}
	snap, err := stock.New(rc).Snapshot(ctx, c.Sale.ID, c.Sale.Items)
	if err != nil {
		t.Fatal(err)
	}
	// What the promoted node offers: the units of the lost holds are on sale again until reconcile.
	if want := int64(quantity - len(reserved)); policy == sale.WaitPolicyRelease && snap[0].Stock != want {
		t.Errorf("release: promoted node has %d units on sale, want %d", snap[0].Stock, want)
	}
	var lost []uuid.UUID
	for _, b := range reserved {
		if _, ok := rec.Orders[b.order]; !ok {
			lost = append(lost, b.order)
		}
	}
	for _, b := range reserved[:before] {
		if _, ok := rec.Orders[b.order]; !ok {
			t.Errorf("order %s, reserved while the replica acknowledged, lost in the failover", b.order)
		}
	}
	// A checkout on the promoted node (with a replica of its own): the buyers told to retry do.
	_ = testenv.PrivateRedisReplica(t, replica)
	cfg := server.DefaultConfig()
	cfg.Addr, cfg.ReadModelTTL = "127.0.0.1:0", 0
	_, base := checkouttest.StartApp(t, server.AppConfig{
		Server: cfg, RedisURL: replica.URL, PostgresURL: c.PostgresURL, Kafka: kafkaconn.Conn{Brokers: c.Brokers},
		OrdersTopic: c.OrdersTopic, DeadLetterTopic: c.DeadLetterTopic, JWTSecret: checkouttest.Secret, API: true,
		ConsumerGroup: c.ConsumerGroup, Lifecycle: lifecycle.DefaultConfig(), SwitchesKey: c.SwitchesKey,
		ControlPoll: 20 * time.Millisecond, RoomTick: 20 * time.Millisecond,
	}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	retried := 0
	for _, b := range retry[:toldRetry] {
		if buy(base, b) {
			retried++
		}
	}
	t.Logf("waitPolicy %s: %d buyers (%d while the replica acknowledged, %d while it was cut off): told RESERVED %d, told retry %d, lost after failover %d (all in PostgreSQL through Kafka); the promoted node offers %d of %d units with %d sold; retries on it: %d of %d RESERVED",
		policy, before+during, before, during, toldReserved, toldRetry, len(lost), snap[0].Stock, quantity, toldReserved, retried, toldRetry)
	switch policy {
	case sale.WaitPolicyCount:
		if toldRetry != 0 || len(lost) != during {
			t.Errorf("count: told retry %d, lost %d; want 0 and the %d reserved while the replica was cut off", toldRetry, len(lost), during)
		}
	case sale.WaitPolicyRelease:
		if toldRetry != during || len(lost) != 0 || retried != toldRetry {
			t.Errorf("release: told retry %d, lost %d, retries reserved %d; want %d, 0 and %d", toldRetry, len(lost), retried, during, during)
		}
	}
}
