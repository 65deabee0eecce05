package server_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/fsctl/fsctl/internal/harness/stack"
	"github.com/fsctl/fsctl/internal/harness/testenv"
	"github.com/fsctl/fsctl/internal/platform/kafkaconn"
	"github.com/fsctl/fsctl/reconcile"
	"github.com/fsctl/fsctl/server"
	checkouttest "github.com/fsctl/fsctl/server/servertest"
)

// TestAFrozenBrokerLeavesNoBuyerWaiting holds the checkout's broker frozen (SIGSTOP: connections
// stay open, nothing is answered) with a publish timeout of a minute, so only the purchase deadline
// (2 s here) can answer the buyers. Every purchase must be answered, by 503 UNAVAILABLE with a
// Retry-After and the deadline named, long before the buyers' own 15 s timeout; without the deadline
// each would hang until the publish timeout. The purchases go on behind the answers: once the broker
// thaws, each buyer's retry with the same key learns its order (202), and nothing is oversold.
func TestAFrozenBrokerLeavesNoBuyerWaiting(t *testing.T) {
	kcfg, brokers := testenv.PrivateKafkaStack(t)
	const buyers, deadline = 8, 2 * time.Second
	c := checkouttest.Start(t, checkouttest.Options{Quantity: 20, Kafka: brokers, Tune: func(cfg *server.Config) {
		cfg.PurchaseDeadline, cfg.PublishTimeout = deadline, time.Minute
	}})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	client := &http.Client{Timeout: 15 * time.Second}
	// One order before the freeze: the publisher's connection to the broker is open, so the
	// purchases after it wait on it until the publish timeout (a minute), not on a new
	// connection's dial timeout (3 s), and only the deadline can answer them in time.
	if a := purchaseOnce(t, client, c, "before-the-freeze"); !strings.HasPrefix(a, "202 ") {
		t.Fatalf("the purchase before the freeze: %s, want 202", a)
	}
	if _, err := stack.Kill(ctx, kcfg, stack.Kafka, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	thawed := false
	thaw := func() {
		if !thawed {
			thawed = true
			if _, err := stack.Kill(ctx, kcfg, stack.Kafka, syscall.SIGCONT); err != nil {
				t.Error(err)
			}
		}
	}
	t.Cleanup(thaw)

	answers := make([]string, buyers)
	var wg sync.WaitGroup
	for i := range buyers {
		wg.Go(func() { answers[i] = purchaseOnce(t, client, c, fmt.Sprintf("frozen-%d", i)) })
	}
	wg.Wait()
	for i, a := range answers {
		if !strings.HasPrefix(a, "503 1 ") || !strings.Contains(a, "UNAVAILABLE") || !strings.Contains(a, "purchase deadline (2s)") {
			t.Errorf("buyer %d, broker frozen: %s; want 503 UNAVAILABLE with Retry-After 1, the deadline named", i, a)
		}
	}
	if t.Failed() {
		return
	}

	thaw()
	for i := range buyers {
		var last string
		for try := 0; try < 60 && !strings.HasPrefix(last, "202 "); try++ {
			if try > 0 {
				time.Sleep(500 * time.Millisecond)
			}
			last = purchaseOnce(t, client, c, fmt.Sprintf("frozen-%d", i))
		}
		if !strings.HasPrefix(last, "202 ") {
			t.Errorf("buyer %d's retry after the thaw: %s, want the order that went on (202)", i, last)
		}
	}
	rep, err := reconcile.Run(ctx, reconcile.Config{SaleID: c.Sale.ID, RedisURL: c.RedisURL, PostgresURL: c.PostgresURL,
		Kafka: kafkaconn.Conn{Brokers: c.Brokers}, OrdersTopic: c.OrdersTopic, DeadLetterTopic: c.DeadLetterTopic, ConsumerGroup: c.ConsumerGroup,
		OrphanAge: time.Hour, DrainTimeout: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if it := rep.Items[0]; it.Stock+it.Holds != 20 || it.Holds != buyers+1 {
		t.Fatalf("after the thaw: redis stock %d and %d holds, want %d holds of 20 units; problems %v", it.Stock, it.Holds, buyers+1, it.Problems)
	}
}

// purchaseOnce sends one purchase of item hot for user with key k1 and returns "<status>
// <Retry-After> <body>"; a client timeout fails the test.
func purchaseOnce(t *testing.T, client *http.Client, c *checkouttest.Checkout, user string) string {
	req, err := http.NewRequest(http.MethodPost, c.Base+"/api/v1/sales/"+c.Sale.ID+"/items/hot/purchase", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+c.Token(user))
	req.Header.Set("Idempotency-Key", "k1")
	resp, err := client.Do(req)
	if err != nil {
		t.Errorf("buyer %s got no answer: %v", user, err)
		return "no answer"
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return fmt.Sprintf("%d %s %s", resp.StatusCode, resp.Header.Get("Retry-After"), strings.TrimSpace(string(b)))
}
