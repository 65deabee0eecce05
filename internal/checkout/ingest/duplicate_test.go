package ingest_test

import (
	"context"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/fsctl/fsctl/internal/platform/kafkaconn"
	"github.com/fsctl/fsctl/reconcile"
	checkouttest "github.com/fsctl/fsctl/server/servertest"
)

// TestADuplicatedOrderPlacedIsAbsorbed: segmentio/kafka-go has no idempotent producer, so a
// publish retried after a lost acknowledgement writes the OrderPlaced twice. The design relies on
// the consumer absorbing the copies (docs/design.md): here a real purchase's event is written twice
// more, byte for byte, and once the group has read them all there is one order, one unit sold,
// and Redis agrees with PostgreSQL. A consumer that placed a copy again would count a second unit
// sold, and reconcile would find Redis and PostgreSQL apart.
func TestADuplicatedOrderPlacedIsAbsorbed(t *testing.T) {
	c := checkouttest.Start(t, checkouttest.Options{Quantity: 5})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if code, body := c.Buy("dup-buyer", "hot", "k1"); code != 202 {
		t.Fatalf("purchase: %d %s", code, body)
	}
	placed := readTopic(t, ctx, c.Brokers, c.OrdersTopic)
	if len(placed) != 1 {
		t.Fatalf("%d messages on the orders topic after one purchase, want its OrderPlaced", len(placed))
	}
	w := &kafka.Writer{Addr: kafka.TCP(c.Brokers...), Topic: c.OrdersTopic, Balancer: &kafka.Hash{}, RequiredAcks: kafka.RequireAll}
	defer w.Close()
	m := placed[0]
	dup := kafka.Message{Key: m.Key, Value: m.Value, Headers: m.Headers}
	if err := w.WriteMessages(ctx, dup, dup); err != nil {
		t.Fatalf("write the copies: %v", err)
	}
	waitConsumed(t, ctx, c, 3)

	rep, err := reconcile.Run(ctx, reconcile.Config{SaleID: c.Sale.ID, RedisURL: c.RedisURL, PostgresURL: c.PostgresURL,
		Kafka: kafkaconn.Conn{Brokers: c.Brokers}, OrdersTopic: c.OrdersTopic, DeadLetterTopic: c.DeadLetterTopic, ConsumerGroup: c.ConsumerGroup,
		OrphanAge: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	it := rep.Items[0]
	if !rep.OK() || it.Counts.Sold != 1 || it.Counts.Pending != 1 || it.Stock != 4 || it.Holds != 1 {
		t.Fatalf("after the OrderPlaced three times: sold %d, pending %d, redis stock %d and %d holds (want 1, 1, 4, 1); problems %v",
			it.Counts.Sold, it.Counts.Pending, it.Stock, it.Holds, it.Problems)
	}
	if rep.Kafka == nil || rep.Kafka.DeadLetters != 0 {
		t.Fatalf("the copies were dead-lettered: %+v", rep.Kafka)
	}
}

// readTopic reads every message of topic, partition by partition, up to where each ends now.
func readTopic(t *testing.T, ctx context.Context, brokers []string, topic string) []kafka.Message {
	t.Helper()
	conn, err := kafka.DialContext(ctx, "tcp", brokers[0])
	if err != nil {
		t.Fatal(err)
	}
	parts, err := conn.ReadPartitions(topic)
	conn.Close()
	if err != nil {
		t.Fatal(err)
	}
	var out []kafka.Message
	for _, p := range parts {
		lc, err := kafka.DialLeader(ctx, "tcp", brokers[0], topic, p.ID)
		if err != nil {
			t.Fatal(err)
		}
		end, err := lc.ReadLastOffset()
		if err == nil && end > 0 {
			_, err = lc.Seek(0, kafka.SeekAbsolute)
		}
		for off := int64(0); err == nil && off < end; off++ {
			_ = lc.SetReadDeadline(time.Now().Add(5 * time.Second))
			var m kafka.Message
			if m, err = lc.ReadMessage(1 << 20); err == nil {
				out = append(out, m)
			}
		}
		lc.Close()
		if err != nil {
			t.Fatalf("read %s/%d: %v", topic, p.ID, err)
		}
	}
	return out
}

// waitConsumed waits until the checkout's group has committed all n messages of its orders topic.
func waitConsumed(t *testing.T, ctx context.Context, c *checkouttest.Checkout, n int64) {
	t.Helper()
	client, closeIdle, err := kafkaconn.NewClient(kafkaconn.Conn{Brokers: c.Brokers}, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer closeIdle()
	for {
		g, err := kafkaconn.GroupLag(ctx, client, c.OrdersTopic, c.ConsumerGroup)
		var end int64
		for _, p := range g.Partitions {
			end += p.End
		}
		if err == nil && end == n && g.Lag == 0 {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("the group did not read the %d messages: %+v, %v", n, g, err)
		case <-time.After(100 * time.Millisecond):
		}
	}
}
