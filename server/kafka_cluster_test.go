package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/segmentio/kafka-go"

	"github.com/fsctl/fsctl/internal/harness/stack"
	"github.com/fsctl/fsctl/internal/harness/testenv"
	"github.com/fsctl/fsctl/internal/harness/testenv/eventually"
	"github.com/fsctl/fsctl/internal/proof/verify"
	checkouttest "github.com/fsctl/fsctl/server/servertest"
)

// privateKafkaPort is the first broker of this package's own replicated Kafka (controllers 100 up).
const privateKafkaPort = 19400

// TestBrokerLostMidBurst: the checkout on a replicated Kafka of its own (3 KRaft brokers, orders
// topic replication factor 3, min.insync.replicas 2, acks=all). Buyers keep arriving while the
// broker that leads the orders partition — and may be the active controller and the group
// coordinator too — is killed with SIGKILL. Every 202 must be an order PostgreSQL ends up with
// (lost: 0); an answer during the leader election is either a 202 or the retryable 503
// ORDER_PIPELINE_UNAVAILABLE (nothing reserved), never anything else; and the sale does not
// oversell. The test logs the figures docs/stack.md ("Replicated Kafka") quotes.
func TestBrokerLostMidBurst(t *testing.T) {
	cfg, brokers := testenv.PrivateKafkaCluster(t, privateKafkaPort)
	const quantity, buyers, rate = 2000, 1500, 250 // six seconds of buyers
	c := checkouttest.Start(t, checkouttest.Options{Quantity: quantity, Kafka: brokers})
	leader := partitionLeader(t, brokers, c.OrdersTopic, c.Sale.ID+"/hot")

	type answer struct {
		code     int
		body     string
		order    string
		sent, at time.Time
	}
	answers := make([]answer, buyers)
	var killedAt time.Time
	var wg sync.WaitGroup
	start := time.Now()
	for i := range buyers {
		// An open model: rate buyers a second, each on its own connection; the kill after 1.5 s.
		time.Sleep(time.Until(start.Add(time.Duration(i) * time.Second / rate)))
		if i == rate*3/2 {
			pid, err := stack.KillKafkaBroker(context.Background(), cfg, leader)
			if err != nil {
				t.Fatalf("kill the orders partition's leader %s: %v", leader, err)
			}
			killedAt = time.Now()
			t.Logf("killed broker %s (pid %d), the leader of %s, after %d buyers", leader, pid, c.OrdersTopic, i)
		}
		wg.Go(func() {
			sent := time.Now()
			code, body := c.Buy(fmt.Sprintf("b%d", i), "hot", "k")
			a := answer{code: code, body: body, sent: sent, at: time.Now()}
			if code == 202 {
				var r struct {
					OrderID string `json:"orderId"`
				}
				if err := json.Unmarshal([]byte(body), &r); err != nil || r.OrderID == "" {
					t.Errorf("buyer %d: 202 without an order id: %s", i, body)
				}
				a.order = r.OrderID
			}
			answers[i] = a
		})
	}
	wg.Wait()

	acked := map[uuid.UUID]bool{}
	retryable := 0
	var firstAfter time.Time
	for i, a := range answers {
		switch {
		case a.code == 202:
			acked[uuid.MustParse(a.order)] = true
			if a.sent.After(killedAt) && (firstAfter.IsZero() || a.at.Before(firstAfter)) {
				firstAfter = a.at
			}
		case a.code == 503 && strings.Contains(a.body, "ORDER_PIPELINE_UNAVAILABLE"):
			if retryable == 0 {
				t.Logf("first retryable answer, buyer %d, %s after the kill: %s", i, a.at.Sub(killedAt).Round(time.Millisecond), a.body)
			}
			retryable++
		default:
			t.Errorf("buyer %d during the broker loss: %d %s (want 202, or 503 ORDER_PIPELINE_UNAVAILABLE to retry)", i, a.code, a.body)
		}
	}
	// Per half second of arrival: what the buyers who came then were told.
	var timeline []string
	for from := time.Duration(0); from < time.Duration(buyers)*time.Second/rate; from += 500 * time.Millisecond {
		n202, n503 := 0, 0
		for _, a := range answers {
			if d := a.sent.Sub(start); d >= from && d < from+500*time.Millisecond {
				if a.code == 202 {
					n202++
				} else {
					n503++
				}
			}
		}
		timeline = append(timeline, fmt.Sprintf("%.1fs %d/%d", from.Seconds(), n202, n503))
	}
	t.Logf("202/other by arrival (kill at %.1fs): %s", killedAt.Sub(start).Seconds(), strings.Join(timeline, ", "))
	if len(acked) == 0 {
		t.Fatal("no buyer was told 202: the burst tested nothing")
	}

	// The pipeline comes back: a new buyer every 200 ms until one is told 202, within a minute of
	// the kill.
	var recovered time.Duration
	probes := 0
	eventually.OKEvery(t, time.Until(killedAt.Add(time.Minute)), 200*time.Millisecond, func() error {
		code, body := c.Buy(fmt.Sprintf("probe%d", probes), "hot", "k")
		probes++
		if code != 202 {
			return fmt.Errorf("no purchase recorded for a minute after broker %s died: the order pipeline never recovered", leader)
		}
		recovered = time.Since(killedAt)
		var r struct {
			OrderID string `json:"orderId"`
		}
		if err := json.Unmarshal([]byte(body), &r); err != nil {
			t.Fatalf("probe: 202 %s: %v", body, err)
		}
		acked[uuid.MustParse(r.OrderID)] = true // checked below with the others
		return nil
	})

	// Every acknowledged order reaches PostgreSQL through the surviving brokers.
	var missing []uuid.UUID
	waiting, err := verify.Settle(context.Background(), 90*time.Second, 200*time.Millisecond, func(ctx context.Context) ([]string, error) {
		missing = missing[:0]
		for id := range acked {
			if _, err := c.App.Orders.GetOrder(ctx, id); err != nil {
				missing = append(missing, id)
			}
		}
		if len(missing) > 0 {
			return []string{fmt.Sprintf("%d of %d acknowledged orders not in PostgreSQL yet", len(missing), len(acked))}, nil
		}
		return nil, nil
	})
	if err != nil || len(waiting) > 0 {
		t.Fatalf("acknowledged orders lost with broker %s: %d of %d (%v %v), e.g. %v", leader, len(missing), len(acked), waiting, err, missing[:min(3, len(missing))])
	}
	counts, err := c.App.Orders.Counts(context.Background(), c.Sale.ID)
	if err != nil {
		t.Fatal(err)
	}
	var live int64
	for _, x := range counts {
		live += x.Pending + x.Paid
	}
	if live != int64(len(acked)) || live > quantity {
		t.Fatalf("PostgreSQL holds %d live orders for %d acknowledged (quantity %d)", live, len(acked), quantity)
	}
	// Recovery: the first 202 to a buyer who came after the kill, else the first probe's.
	if !firstAfter.IsZero() {
		recovered = firstAfter.Sub(killedAt)
	}
	t.Logf("broker lost mid-burst: %d buyers, %d acknowledged, %d in PostgreSQL, lost 0; %d told to retry (503); purchases recorded again %s after the kill",
		buyers, len(acked), live, retryable, recovered.Round(100*time.Millisecond))
}

// partitionLeader is the broker that leads the partition an item's orders go to (they share one
// key, so one partition, chosen by the publisher's hash).
func partitionLeader(t *testing.T, brokers []string, topic, key string) string {
	t.Helper()
	conn, err := kafka.Dial("tcp", brokers[0])
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	parts, err := conn.ReadPartitions(topic)
	if err != nil {
		t.Fatal(err)
	}
	ids := make([]int, len(parts))
	for i, p := range parts {
		ids[i] = p.ID
	}
	want := (&kafka.Hash{}).Balance(kafka.Message{Key: []byte(key)}, ids...)
	for _, p := range parts {
		if p.ID == want {
			return fmt.Sprintf("%s:%d", p.Leader.Host, p.Leader.Port)
		}
	}
	t.Fatalf("no partition %d in %s", want, topic)
	return ""
}
