package testenv

import (
	"context"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/segmentio/kafka-go"
)

var slugRE = regexp.MustCompile(`^[A-Za-z0-9_-]{1,40}$`)

func TestIDFormatAndUniqueness(t *testing.T) {
	for _, prefix := range []string{"", "sale", "item/with spaces:and*stuff", strings.Repeat("x", 100), "ünïcode"} {
		t.Run(prefix, func(t *testing.T) {
			seen := map[string]bool{}
			for range 1000 {
				id := ID(t, prefix)
				if !slugRE.MatchString(id) {
					t.Fatalf("ID(%q) = %q, not a slug of at most 40 characters", prefix, id)
				}
				if seen[id] {
					t.Fatalf("ID(%q) repeated %q", prefix, id)
				}
				seen[id] = true
			}
		})
	}
	if id := ID(t, "sale"); !strings.HasPrefix(id, "sale-") {
		t.Errorf("ID keeps the prefix: got %q", id)
	}
}

func TestRedis(t *testing.T) {
	t.Parallel()
	client := Redis(t)
	key := ID(t, "testenv")
	ctx := context.Background()
	if err := client.Set(ctx, key, "1", time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	if err := client.Del(ctx, key).Err(); err != nil {
		t.Fatal(err)
	}
}

func TestPostgres(t *testing.T) {
	t.Parallel()
	url := Postgres(t)
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var db string
	if err := conn.QueryRow(ctx, "SELECT current_database()").Scan(&db); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(db, "fsctl_t_") || !strings.Contains(url, db) {
		t.Errorf("connected to %q via %s", db, url)
	}
	// Leave the connection open: cleanup must drop the database anyway (WITH (FORCE)).
}

func TestKafkaTopic(t *testing.T) {
	t.Parallel()
	topic := KafkaTopic(t, 3)
	brokers := KafkaBrokers(t)
	w := &kafka.Writer{Addr: kafka.TCP(brokers...), Topic: topic, Balancer: &kafka.Hash{}, RequiredAcks: kafka.RequireAll}
	defer w.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := w.WriteMessages(ctx, kafka.Message{Key: []byte("item-1"), Value: []byte("hello")}); err != nil {
		t.Fatalf("produce to fresh topic %s: %v", topic, err)
	}
	conn, err := kafka.DialContext(ctx, "tcp", brokers[0])
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	parts, err := conn.ReadPartitions(topic)
	if err != nil || len(parts) != 3 {
		t.Fatalf("partitions of %s: %v, %v", topic, parts, err)
	}
}
