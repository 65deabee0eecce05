package readmodel_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/segmentio/kafka-go"

	"github.com/fsctl/fsctl/internal/checkout/events"
	"github.com/fsctl/fsctl/internal/checkout/readmodel"
	"github.com/fsctl/fsctl/internal/checkout/stock"
	"github.com/fsctl/fsctl/internal/contract/sale"
	"github.com/fsctl/fsctl/internal/harness/testenv"
	"github.com/fsctl/fsctl/internal/harness/testenv/eventually"
	"github.com/fsctl/fsctl/internal/platform/kafkaconn"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

func snap(item string, remaining int64, at time.Time) events.StockSnapshot {
	return events.StockSnapshot{Type: events.TypeStockSnapshot, SaleID: "s", ItemID: item, Remaining: remaining, ReadAt: at}
}

func TestApplyKeepsTheLatestRead(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name   string
		second events.StockSnapshot
		kept   bool
	}{
		{"newer replaces", snap("a", 4, t0.Add(time.Microsecond)), true},
		{"older is dropped", snap("a", 9, t0.Add(-time.Second)), false},
		{"same read time is dropped", snap("a", 9, t0), false},
		{"another item is kept", snap("b", 9, t0.Add(-time.Second)), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := newView(t, readmodel.ViewConfig{Kafka: kafkaconn.Conn{Brokers: []string{"127.0.0.1:1"}}}, nil)
			if !v.Apply(snap("a", 5, t0)) {
				t.Fatal("first snapshot not kept")
			}
			if got := v.Apply(tc.second); got != tc.kept {
				t.Fatalf("Apply = %v, want %v", got, tc.kept)
			}
		})
	}
}

// newView is readmodel.NewView for a test: a connection wrong in form fails it.
func newView(t testing.TB, cfg readmodel.ViewConfig, rdb redis.UniversalClient) *readmodel.View {
	t.Helper()
	v, err := readmodel.NewView(cfg, rdb, quiet)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// runView starts a View of topic and waits until it is live.
func runView(t *testing.T, brokers []string, topic string) *readmodel.View {
	t.Helper()
	v := newView(t, readmodel.ViewConfig{Kafka: kafkaconn.Conn{Brokers: brokers}, Topic: topic, Probe: 100 * time.Millisecond, MaxStale: time.Second},
		testenv.Redis(t))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = v.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	eventually.True(t, 15*time.Second, v.Live, "view of %s not live", topic)
	return v
}

// waitStock waits until the view shows want for the item, or fails after 10 s.
func waitStock(t *testing.T, v *readmodel.View, saleID string, it sale.Item, want int64) {
	t.Helper()
	eventually.OK(t, 10*time.Second, func() error {
		st, err := v.Stock(saleID, []sale.Item{it})
		if err != nil || st.Remaining[it.ID] != want {
			return fmt.Errorf("view shows %v (err %v) for %s/%s, want %d", st.Remaining, err, saleID, it.ID, want)
		}
		return nil
	})
}

// TestPublishedSnapshotsReachAFreshView: the publisher reads Redis (every shard summed) and a View
// started afterwards learns the numbers from the topic, not from Redis: Redis has moved on since.
func TestPublishedSnapshotsReachAFreshView(t *testing.T) {
	rdb := testenv.Redis(t)
	brokers, topic, saleID := testenv.KafkaBrokers(t), testenv.KafkaTopic(t, 2), testenv.ID(t, "sale")
	ctx := context.Background()
	plain, sharded := sale.Item{ID: "plain"}, sale.Item{ID: "sharded", Shards: 2}
	set := func(item string, shard, shards int, n int64) {
		k := stock.ShardKeys(saleID, item, shard, shards).Stock()
		if err := rdb.Set(ctx, k, n, time.Minute).Err(); err != nil {
			t.Fatal(err)
		}
	}
	set("plain", 0, 0, 7)
	set("sharded", 0, 2, 3)
	set("sharded", 1, 2, 4)
	pubc, err := events.NewPublisher(kafkaconn.Conn{Brokers: brokers}, topic)
	if err != nil {
		t.Fatal(err)
	}
	defer pubc.Close()
	p := readmodel.NewPublisher(rdb, pubc, 0, -1, quiet)
	p.Changed(stock.ItemRef{SaleID: saleID, ItemID: "plain"}, stock.ItemRef{SaleID: saleID, ItemID: "sharded", Shards: 2})
	if err := p.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	set("plain", 0, 0, 100) // no snapshot says so: a view that reads Redis would show it

	v := runView(t, brokers, topic)
	waitStock(t, v, saleID, plain, 7)
	waitStock(t, v, saleID, sharded, 7)
	if err := v.Seed(ctx, saleID, []sale.Item{plain, sharded}); err != nil {
		t.Fatal(err)
	}
	waitStock(t, v, saleID, plain, 7) // a seed reads only items no snapshot names
}

// TestRefreshPublishesSilentChanges: a change of stock no publisher was told of (the API's release
// after a failed hand-off, a preload, a rebuild) reaches the page within a refresh, for an item the
// publisher saw change lately; without the refresh the page would keep the old number until the
// item's next change.
func TestRefreshPublishesSilentChanges(t *testing.T) {
	rdb := testenv.Redis(t)
	brokers, topic, saleID := testenv.KafkaBrokers(t), testenv.KafkaTopic(t, 1), testenv.ID(t, "sale")
	ctx := context.Background()
	it := sale.Item{ID: "hot"}
	set := func(n int64) {
		if err := rdb.Set(ctx, stock.ShardKeys(saleID, it.ID, 0, 0).Stock(), n, time.Minute).Err(); err != nil {
			t.Fatal(err)
		}
	}
	set(7)
	pubc, err := events.NewPublisher(kafkaconn.Conn{Brokers: brokers}, topic)
	if err != nil {
		t.Fatal(err)
	}
	defer pubc.Close()
	p := readmodel.NewPublisher(rdb, pubc, 0, 200*time.Millisecond, quiet)
	rctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); _ = p.Run(rctx) }()
	t.Cleanup(func() { cancel(); <-done })
	v := runView(t, brokers, topic)
	p.Changed(stock.ItemRef{SaleID: saleID, ItemID: it.ID})
	waitStock(t, v, saleID, it, 7)
	set(8) // a unit back on sale without a word to the publisher
	waitStock(t, v, saleID, it, 8)
}

// TestOlderSnapshotNeverWins: a snapshot read earlier but published later (two publishers racing)
// does not replace the newer one, in a running view or in a fresh one replaying the topic.
func TestOlderSnapshotNeverWins(t *testing.T) {
	brokers, topic, saleID := testenv.KafkaBrokers(t), testenv.KafkaTopic(t, 1), testenv.ID(t, "sale")
	pubc, err := events.NewPublisher(kafkaconn.Conn{Brokers: brokers}, topic)
	if err != nil {
		t.Fatal(err)
	}
	defer pubc.Close()
	v := runView(t, brokers, topic)
	t0 := time.Now().UTC()
	publish := func(remaining int64, at time.Time) {
		s := snap("hot", remaining, at)
		s.SaleID = saleID
		m, err := events.EncodeStockSnapshot(s)
		if err != nil {
			t.Fatal(err)
		}
		if err := pubc.Publish(context.Background(), m); err != nil {
			t.Fatal(err)
		}
	}
	publish(3, t0)
	publish(9, t0.Add(-time.Second))
	publish(8, t0.Add(-time.Millisecond))
	it := sale.Item{ID: "hot"}
	waitStock(t, v, saleID, it, 3)
	time.Sleep(300 * time.Millisecond) // time for the older ones to arrive, were they to win
	waitStock(t, v, saleID, it, 3)
	waitStock(t, runView(t, brokers, topic), saleID, it, 3)
}

// TestViewNotLiveWithoutItsTopic: a view whose topic is gone (or whose Kafka never answers) stops
// vouching for its numbers, so the sale page reads Redis instead.
func TestViewNotLiveWithoutItsTopic(t *testing.T) {
	brokers, topic := testenv.KafkaBrokers(t), testenv.ID(t, "fsctl-t-stock")
	ctx0, cancel0 := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel0()
	if err := events.EnsureCompactedTopic(ctx0, kafkaconn.Conn{Brokers: brokers}, topic, 1); err != nil {
		t.Fatal(err)
	}
	if got := topicConfig(t, brokers, topic, "cleanup.policy"); got != "compact" {
		t.Fatalf("stock topic cleanup.policy %q, want compact", got)
	}
	t.Cleanup(func() { // when the test failed before deleting it
		c := &kafka.Client{Addr: kafka.TCP(brokers...), Timeout: 10 * time.Second}
		_, _ = c.DeleteTopics(context.Background(), &kafka.DeleteTopicsRequest{Topics: []string{topic}})
	})
	v := runView(t, brokers, topic)
	it := sale.Item{ID: "hot"}
	v.Apply(events.StockSnapshot{Type: events.TypeStockSnapshot, SaleID: "s", ItemID: "hot", Remaining: 1, ReadAt: time.Now()})
	if _, err := v.Stock("s", []sale.Item{it}); err != nil {
		t.Fatalf("live view: %v", err)
	}
	deleteTopic(t, brokers, topic)
	eventually.OK(t, 10*time.Second, func() error {
		if _, err := v.Stock("s", []sale.Item{it}); !errors.Is(err, readmodel.ErrNotLive) {
			return fmt.Errorf("view still answers after its topic was deleted (err %v)", err)
		}
		return nil
	})

	down := newView(t, readmodel.ViewConfig{Kafka: kafkaconn.Conn{Brokers: []string{"127.0.0.1:1"}}, Topic: topic, Probe: 50 * time.Millisecond}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	go func() { _ = down.Run(ctx) }()
	<-ctx.Done()
	if down.Live() {
		t.Fatal("a view of an unreachable Kafka says it is live")
	}
}

func deleteTopic(t *testing.T, brokers []string, topic string) {
	t.Helper()
	c := &kafka.Client{Addr: kafka.TCP(brokers...), Timeout: 10 * time.Second}
	res, err := c.DeleteTopics(context.Background(), &kafka.DeleteTopicsRequest{Topics: []string{topic}})
	if err != nil {
		t.Fatal(err)
	}
	if err := res.Errors[topic]; err != nil {
		t.Fatal(err)
	}
}

func topicConfig(t *testing.T, brokers []string, topic, name string) string {
	t.Helper()
	c := &kafka.Client{Addr: kafka.TCP(brokers...), Timeout: 10 * time.Second}
	res, err := c.DescribeConfigs(context.Background(), &kafka.DescribeConfigsRequest{Resources: []kafka.DescribeConfigRequestResource{
		{ResourceType: kafka.ResourceTypeTopic, ResourceName: topic, ConfigNames: []string{name}}}})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range res.Resources {
		for _, e := range r.ConfigEntries {
			if e.ConfigName == name {
				return e.ConfigValue
			}
		}
	}
	return ""
}
