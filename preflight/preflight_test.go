package preflight_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/fsctl/fsctl/internal/checkout/stock"
	"github.com/fsctl/fsctl/internal/contract/finding"
	"github.com/fsctl/fsctl/internal/harness/testenv"
	"github.com/fsctl/fsctl/internal/harness/testenv/eventually"
	"github.com/fsctl/fsctl/internal/platform/kafkaconn"
	"github.com/fsctl/fsctl/internal/proof/verify"
	"github.com/fsctl/fsctl/preflight"
	checkouttest "github.com/fsctl/fsctl/server/servertest"
)

func TestHealthyStackIsReady(t *testing.T) {
	tg := newTarget(t, checkouttest.Options{Quantity: 40, Shards: 4})
	rep := tg.run(t)
	if !rep.Ready(false) {
		t.Fatalf("a healthy stack is not ready: %v", failures(rep))
	}
	for _, check := range []string{"migrations", "constraints", "sale definition", "schedule", "limits", "stock hot",
		"hash slots hot", "eviction policy", "scripts", "orders topic", "dead-letter topic", "consumer group",
		"ready " + tg.c.Base, "sale view " + tg.c.Base, "clock redis", "clock postgres", "clock server", "kill switches", "sale pause"} {
		if r := result(t, rep, check); r.Status != finding.Pass && r.Status != finding.Warn {
			t.Errorf("%s: %s %s", check, r.Status, r.Detail)
		}
	}
	expect(t, rep, "stock hot", finding.Pass, "redis 40 on 4 shard(s), expected 40")
}

// TestReadyOnRedisCluster: the same checks pass on the local Redis Cluster, the node checks run on
// every master, and the placement of the hot item's 4 shards over the masters is said.
func TestReadyOnRedisCluster(t *testing.T) {
	tg := newTarget(t, checkouttest.Options{Quantity: 40, Shards: 4, Cluster: true})
	rep := tg.run(t)
	if !rep.Ready(false) {
		t.Fatalf("a healthy cluster is not ready: %v", failures(rep))
	}
	expect(t, rep, "stock hot", finding.Pass, "redis 40 on 4 shard(s), expected 40")
	expect(t, rep, "eviction policy", finding.Pass, "3 masters; 127.0.0.1:")
	// fsctl salts the shards' tags so 4 shards cover all 3 masters of an evenly split cluster.
	if r := result(t, rep, "shard placement hot"); r.Status != finding.Pass || !strings.Contains(r.Detail, "shard 3 on 127.0.0.1:") || !strings.Contains(r.Detail, "(3 of 3 masters)") {
		t.Errorf("shard placement: %s %s", r.Status, r.Detail)
	}
	// A node of the cluster given as one node is refused with what to give instead.
	cfg := tg.cfg
	cfg.RedisURL = "redis://127.0.0.1:17000/0"
	r := result(t, run(t, cfg), "redis reachable")
	if r.Status != finding.Fail || !strings.Contains(r.Detail, "is a node of a Redis Cluster: give the cluster as redis+cluster://") {
		t.Errorf("a cluster node as one node: %s %s", r.Status, r.Detail)
	}
}

// TestReadyOnReplicatedKafka: on the local replicated Kafka (3 brokers) the orders topic is
// replicated three ways with two in-sync replicas required, and the durability check passes; on the
// single broker it warns that one broker lost loses every order not yet in PostgreSQL.
func TestReadyOnReplicatedKafka(t *testing.T) {
	tg := newTarget(t, checkouttest.Options{Quantity: 10, Kafka: testenv.KafkaClusterBrokers(t)})
	// A fresh group's coordinator on a fresh cluster takes a moment to seat its consumer.
	kc, closeIdle, err := kafkaconn.NewClient(tg.cfg.Kafka, 3*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer closeIdle()
	waiting, err := verify.Settle(context.Background(), 30*time.Second, 100*time.Millisecond, func(ctx context.Context) ([]string, error) {
		if g, err := kafkaconn.GroupLag(ctx, kc, tg.cfg.OrdersTopic, tg.cfg.ConsumerGroup); err != nil || g.Members == 0 {
			return []string{fmt.Sprintf("group %s: %+v %v", tg.cfg.ConsumerGroup, g, err)}, nil
		}
		return nil, nil
	})
	if err != nil || len(waiting) > 0 {
		t.Fatalf("the order consumer never joined its group on the replicated Kafka: %v %v", waiting, err)
	}
	rep := tg.run(t)
	if !rep.Ready(false) {
		t.Fatalf("a healthy replicated Kafka is not ready: %v", failures(rep))
	}
	expect(t, rep, "durability", finding.Pass, "replication factor 3, min.insync.replicas 2")
	single := newTarget(t, checkouttest.Options{Quantity: 10})
	expect(t, single.run(t), "durability", finding.Warn, "replication factor 1, min.insync.replicas 1: one broker lost loses every order")
}

// TestWrongPreloadIsFixedBeforeTheSale: a counter off by ten units fails; nothing was sold yet, so
// --fix reloads the item from PostgreSQL and the re-run passes.
func TestWrongPreloadIsFixedBeforeTheSale(t *testing.T) {
	tg := newTarget(t, checkouttest.Options{Quantity: 40, Shards: 2})
	rdb := testenv.Redis(t)
	ctx := context.Background()
	if err := rdb.DecrBy(ctx, stock.ShardKeys(tg.c.Sale.ID, "hot", 1, 2).Stock(), 10).Err(); err != nil {
		t.Fatal(err)
	}
	expect(t, tg.run(t), "stock hot", finding.Fail, "redis 30")
	tg.cfg.Fix = true
	rep := tg.run(t)
	if len(rep.Fixed) != 1 || rep.Fixed[0].Check != "stock hot" || rep.Fixed[0].Error != "" {
		t.Fatalf("fixed %+v, want the item reloaded", rep.Fixed)
	}
	expect(t, rep, "stock hot", finding.Pass, "redis 40")
}

// TestWrongPreloadAfterSalesIsNotRewritten: once a unit is taken, --fix leaves the counters alone.
func TestWrongPreloadAfterSalesIsNotRewritten(t *testing.T) {
	tg := newTarget(t, checkouttest.Options{Quantity: 10})
	if code, body := tg.c.Buy("u1", "hot", "k1"); code != 202 {
		t.Fatalf("purchase: %d %s", code, body)
	}
	waitPending(t, tg, 1)
	rdb := testenv.Redis(t)
	if err := rdb.IncrBy(context.Background(), stock.ItemKeys(tg.c.Sale.ID, "hot").Stock(), 5).Err(); err != nil {
		t.Fatal(err)
	}
	tg.cfg.Fix = true
	rep := tg.run(t)
	if len(rep.Fixed) != 0 {
		t.Fatalf("--fix rewrote live counters: %+v", rep.Fixed)
	}
	r := expect(t, rep, "stock hot", finding.Fail, "units lost or doubled")
	if r.Repair != "" {
		t.Fatalf("a live counter was offered a repair: %+v", r)
	}
}

func waitPending(t *testing.T, tg *target, n int64) {
	t.Helper()
	eventually.OK(t, 20*time.Second, func() error {
		counts, err := tg.c.App.Orders.Counts(context.Background(), tg.c.Sale.ID)
		if err != nil || len(counts) != 1 || counts[0].Pending != n {
			return fmt.Errorf("orders never reached PostgreSQL: %+v %v", counts, err)
		}
		return nil
	})
}

func TestMissingCounterIsPreloaded(t *testing.T) {
	tg := newTarget(t, checkouttest.Options{Quantity: 9, Shards: 3})
	rdb := testenv.Redis(t)
	if err := rdb.Del(context.Background(), stock.ShardKeys(tg.c.Sale.ID, "hot", 2, 3).Stock()).Err(); err != nil {
		t.Fatal(err)
	}
	expect(t, tg.run(t), "stock hot", finding.Fail, "no stock counter on shard(s) [2]")
	tg.cfg.Fix = true
	expect(t, tg.run(t), "stock hot", finding.Pass, "redis 9 on 3 shard(s)")
}

func TestMissingTopicIsCreated(t *testing.T) {
	tg := newTarget(t, checkouttest.Options{Quantity: 1})
	tg.cfg.DeadLetterTopic = testenv.ID(t, "missing-dlq")
	expect(t, tg.run(t), "dead-letter topic", finding.Fail, tg.cfg.DeadLetterTopic+": missing")
	tg.cfg.Fix = true
	rep := tg.run(t)
	expect(t, rep, "dead-letter topic", finding.Pass, "1 partition(s)")
	if len(rep.Fixed) != 1 || rep.Fixed[0].Check != "dead-letter topic" {
		t.Fatalf("fixed %+v", rep.Fixed)
	}
}

func TestConsumerGroupWithoutConsumers(t *testing.T) {
	tg := newTarget(t, checkouttest.Options{Quantity: 1})
	tg.cfg.ConsumerGroup = testenv.ID(t, "nobody")
	expect(t, tg.run(t), "consumer group", finding.Fail, "nobody consumes the orders")
}

// TestEvictingMemoryPolicy sets the policy on a Redis of its own, leaving the shared one alone.
func TestEvictingMemoryPolicy(t *testing.T) {
	tg := newTarget(t, checkouttest.Options{Quantity: 1})
	tg.cfg.RedisURL = testenv.PrivateRedis(t)
	opts, err := redis.ParseURL(tg.cfg.RedisURL)
	if err != nil {
		t.Fatal(err)
	}
	rdb := redis.NewClient(opts)
	defer rdb.Close()
	ctx := context.Background()
	if err := rdb.ConfigSet(ctx, "maxmemory-policy", "allkeys-lru").Err(); err != nil {
		t.Fatal(err)
	}
	expect(t, tg.run(t), "eviction policy", finding.Fail, "maxmemory-policy allkeys-lru")
	if err := rdb.ConfigSet(ctx, "maxmemory-policy", "volatile-lru").Err(); err != nil {
		t.Fatal(err)
	}
	expect(t, tg.run(t), "eviction policy", finding.Warn, "idempotency records may be evicted")
	if err := rdb.ConfigSet(ctx, "maxmemory-policy", "noeviction").Err(); err != nil {
		t.Fatal(err)
	}
	expect(t, tg.run(t), "eviction policy", finding.Pass, "noeviction")
}

// TestMissingScriptsAreLoaded points the check at a Redis of its own: on the shared one, any other
// test's reserve puts a flushed script straight back.
func TestMissingScriptsAreLoaded(t *testing.T) {
	tg := newTarget(t, checkouttest.Options{Quantity: 1})
	tg.cfg.RedisURL = testenv.PrivateRedis(t)
	expect(t, tg.run(t), "scripts", finding.Fail, "not in the script cache: ")
	tg.cfg.Fix = true
	expect(t, tg.run(t), "scripts", finding.Pass, "scripts cached")
}

// TestSkewedClock moves this machine's clock 5 s ahead; every other clock is then behind.
func TestSkewedClock(t *testing.T) {
	tg := newTarget(t, checkouttest.Options{Quantity: 1})
	tg.cfg.Now = func() time.Time { return time.Now().Add(5 * time.Second) }
	rep := tg.run(t)
	for _, check := range []string{"clock redis", "clock postgres", "clock server"} {
		expect(t, rep, check, finding.Fail, "ahead of")
	}
}

func TestPausedSale(t *testing.T) {
	tg := newTarget(t, checkouttest.Options{Quantity: 1})
	ctx := context.Background()
	sl := tg.c.Sale
	if err := tg.c.App.Orders.SetPaused(ctx, sl.ID, true); err != nil {
		t.Fatal(err)
	}
	// PostgreSQL paused, Redis not: the two disagree.
	expect(t, tg.run(t), "sale pause", finding.Fail, "PostgreSQL says paused, Redis says otherwise on shard(s) hot/0")
	if err := tg.c.App.Stock.SetPaused(ctx, sl, true); err != nil {
		t.Fatal(err)
	}
	expect(t, tg.run(t), "sale pause", finding.Fail, "paused")
	tg.cfg.ExpectPaused = true
	expect(t, tg.run(t), "sale pause", finding.Pass, "paused")
}

func TestThrownKillSwitch(t *testing.T) {
	tg := newTarget(t, checkouttest.Options{Quantity: 1})
	if err := tg.c.App.Switches.Set(context.Background(), "payment", true); err != nil {
		t.Fatal(err)
	}
	expect(t, tg.run(t), "kill switches", finding.Fail, "thrown: payment")
}

func TestDroppedConstraint(t *testing.T) {
	tg := newTarget(t, checkouttest.Options{Quantity: 1})
	_, err := tg.c.App.Orders.Pool().Exec(context.Background(), "ALTER TABLE sale_items DROP CONSTRAINT sale_items_sold_le_quantity")
	if err != nil {
		t.Fatal(err)
	}
	expect(t, tg.run(t), "constraints", finding.Fail, "CHECK (sold <= quantity)")
}

func TestSaleFile(t *testing.T) {
	tg := newTarget(t, checkouttest.Options{Quantity: 7})
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	opens := tg.c.Sale.OpensAt.UTC().Format(time.RFC3339)
	tg.cfg.SaleFile = write("same.yaml", "id: "+tg.c.Sale.ID+"\nopensAt: "+opens+"\nholdTTL: 10m\nitems:\n  - id: hot\n    quantity: 7\n")
	expect(t, tg.run(t), "matches", finding.Pass, "the stored sale is the file's")
	tg.cfg.SaleFile = write("more.yaml", "id: "+tg.c.Sale.ID+"\nopensAt: "+opens+"\nholdTTL: 10m\nitems:\n  - id: hot\n    quantity: 8\n")
	expect(t, tg.run(t), "matches", finding.Fail, "items.hot.quantity: stored 7, file 8")
	tg.cfg.SaleFile = write("bad.yaml", "id: "+tg.c.Sale.ID+"\nopensAt: "+opens+"\nitems:\n  - id: hot\n    quantity: -1\n")
	expect(t, tg.run(t), "sale file", finding.Fail, "line 5: items[0].quantity")
}

func TestMissingSale(t *testing.T) {
	tg := newTarget(t, checkouttest.Options{Quantity: 1})
	tg.cfg.SaleID = testenv.ID(t, "nosale")
	rep := tg.run(t)
	r := expect(t, rep, "sale exists", finding.Fail, "not found")
	if r.Fix != "fsctl sale create -f SALE.yaml" {
		t.Fatalf("fix %q", r.Fix)
	}
	expect(t, rep, "stock", finding.Skip, "needs the sale")
}

// TestUnreachableServicesFailFast: nothing listens on port 1, so every probe fails at once with
// the address; none hangs and none panics.
func TestUnreachableServicesFailFast(t *testing.T) {
	testenv.Redis(t) // an integration test like the others: skipped under -short
	rep := run(t, preflight.Config{
		SaleID: "any", RedisURL: "redis://127.0.0.1:1/0", PostgresURL: "postgres://u@127.0.0.1:1/db?sslmode=disable",
		Kafka: kafkaconn.Conn{Brokers: []string{"127.0.0.1:1"}}, Servers: []string{"http://127.0.0.1:1"}, Timeout: 2 * time.Second,
	})
	expect(t, rep, "redis reachable", finding.Fail, "127.0.0.1:1")
	expect(t, rep, "postgres reachable", finding.Fail, "127.0.0.1:1")
	expect(t, rep, "kafka reachable", finding.Fail, "127.0.0.1:1")
	expect(t, rep, "ready http://127.0.0.1:1", finding.Fail, "connection refused")
	if rep.Ready(false) {
		t.Fatal("a stack that is down is ready")
	}
}

// TestRoomRedisOfItsOwn: a waiting-room Redis apart from the stock one has its policy checked too.
func TestRoomRedisOfItsOwn(t *testing.T) {
	tg := newTarget(t, checkouttest.Options{Quantity: 1})
	tg.cfg.RoomRedisURL = testenv.PrivateRedis(t)
	opts, err := redis.ParseURL(tg.cfg.RoomRedisURL)
	if err != nil {
		t.Fatal(err)
	}
	rdb := redis.NewClient(opts)
	defer rdb.Close()
	if err := rdb.ConfigSet(context.Background(), "maxmemory-policy", "allkeys-random").Err(); err != nil {
		t.Fatal(err)
	}
	expect(t, tg.run(t), "room eviction policy", finding.Fail, "allkeys-random")
	expect(t, tg.run(t), "eviction policy", finding.Pass, "noeviction")
}

// TestRedisTooFar: the round trip warns when even the fastest ping is over the bound (the
// distance to Redis), and only then: a loaded machine's slow median alone is no warning.
func TestRedisTooFar(t *testing.T) {
	tg := newTarget(t, checkouttest.Options{Quantity: 1})
	tg.cfg.MaxRedisRTT = time.Nanosecond
	if r := expect(t, tg.run(t), "round trip", finding.Warn, "even the fastest"); r.Fix == "" {
		t.Fatalf("a Redis too far without a fix: %+v", r)
	}
	tg.cfg.MaxRedisRTT = time.Minute
	expect(t, tg.run(t), "round trip", finding.Pass, "5 pings: median ")
}
