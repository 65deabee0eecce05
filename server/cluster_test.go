package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"

	"github.com/fsctl/fsctl/internal/checkout/stock"
	"github.com/fsctl/fsctl/internal/contract/sale"
	"github.com/fsctl/fsctl/internal/harness/stack"
	"github.com/fsctl/fsctl/internal/harness/testenv"
	"github.com/fsctl/fsctl/internal/platform/redisconn"
	"github.com/fsctl/fsctl/internal/proof/verify"
	"github.com/fsctl/fsctl/reconcile"
	checkouttest "github.com/fsctl/fsctl/server/servertest"
)

// TestPurchaseOnRedisCluster: the checkout on the local Redis Cluster, a hot item split over 4
// shards whose hash tags land on different masters. 300 buyers race for 40 units: exactly 40 are
// told 202 (a shard that runs dry borrows from the others across nodes), the rest 410 SOLD_OUT,
// a winner's second click is ALREADY_PURCHASED, and every order reaches PostgreSQL.
func TestPurchaseOnRedisCluster(t *testing.T) {
	c := checkouttest.Start(t, checkouttest.Options{Quantity: 40, Shards: 4, Cluster: true})
	const buyers = 300
	codes := make([]int, buyers)
	bodies := make([]string, buyers)
	var wg sync.WaitGroup
	for i := range buyers {
		wg.Go(func() { codes[i], bodies[i] = c.Buy(fmt.Sprintf("b%d", i), "hot", "k") })
	}
	wg.Wait()
	won, soldOut := 0, 0
	winner := -1
	for i, code := range codes {
		switch {
		case code == 202:
			won++
			winner = i
		case code == 410 && strings.Contains(bodies[i], "SOLD_OUT"):
			soldOut++
		default:
			t.Fatalf("buyer %d: %d %s", i, code, bodies[i])
		}
	}
	if won != 40 || soldOut != buyers-40 {
		t.Fatalf("%d reserved and %d sold out, want 40 and %d", won, soldOut, buyers-40)
	}
	if code, body := c.Buy(fmt.Sprintf("b%d", winner), "hot", "again"); code != 409 || !strings.Contains(body, "ALREADY_PURCHASED") {
		t.Fatalf("a winner's second click: %d %s", code, body)
	}
	var live int64
	waiting, err := verify.Settle(context.Background(), 30*time.Second, 50*time.Millisecond, func(ctx context.Context) ([]string, error) {
		counts, err := c.App.Orders.Counts(ctx, c.Sale.ID)
		live = 0
		for _, x := range counts {
			live += x.Pending + x.Paid
		}
		if err == nil && live < 40 {
			return []string{fmt.Sprintf("%d of 40 orders in PostgreSQL", live)}, nil
		}
		return nil, err
	})
	if err != nil || len(waiting) > 0 || live != 40 {
		t.Fatalf("orders in PostgreSQL: %d (%v %v)", live, waiting, err)
	}
}

// TestLifecycleOnRedisCluster: every end of a reservation on the cluster, the item split over 4
// shards on its masters, with the lifecycle jobs of two instances running: a payment settles, a
// cancel and an expiry each return their unit once, an orphaned hold is re-published by the
// sweeper, and Redis and PostgreSQL then agree on every invariant.
func TestLifecycleOnRedisCluster(t *testing.T) {
	e := newEnvWith(t, envOptions{Cluster: true, Quantity: 6, Limit: 1, Shards: 4, HoldTTL: time.Second, Workers: true})
	e.start(false) // a second instance running the same jobs
	paid := e.mustBuy("payer", "k")
	if code, body := e.pay("payer", paid, "tok_ok"); code != http.StatusOK || !strings.Contains(body, `"PAID"`) {
		t.Fatalf("pay: %d %s", code, body)
	}
	cancelled := e.mustBuy("canceller", "k")
	if code, body := e.cancel("canceller", cancelled); code != http.StatusOK {
		t.Fatalf("cancel: %d %s", code, body)
	}
	expired := e.mustBuy("expirer", "k")
	orphan := mustV7(t)
	if rv, err := e.app.Stock.Reserve(context.Background(), stock.Request{SaleID: e.sale.ID, ItemID: "hot", UserID: "crashed",
		IdemKey: "k", OrderID: orphan, Shards: 4}); err != nil || rv.OrderID != orphan {
		t.Fatalf("reserve the orphan: %+v %v", rv, err)
	}
	e.waitStatus(paid, "PAID")
	e.waitStatus(cancelled, "CANCELLED")
	e.waitStatus(expired, "EXPIRED")
	e.waitStatus(orphan, "EXPIRED") // re-published by the sweeper, recorded, then expired
	rep := e.settled()
	if rep.Stock != 5 || rep.Holds != 0 || rep.Counts.Paid != 1 || rep.Counts.Cancelled != 1 || rep.Counts.Expired != 2 {
		t.Fatalf("after every end on the cluster: stock %d holds %d, counts %+v; want stock 5, 1 paid, 1 cancelled, 2 expired",
			rep.Stock, rep.Holds, rep.Counts)
	}
}

// TestMasterLostWithoutReplica: the checkout on a Redis Cluster of its own (3 masters, no
// replicas), a hot item of 40 units over 4 shards spread over the masters. The master that holds
// some of the shards is killed. Buyers then get a 202 for every unit on the live masters (a buyer
// whose home shard is alive borrows from the other live shards), and every other buyer the
// retryable 503 UNAVAILABLE: the stranded shards may still hold units, so nobody is told SOLD_OUT,
// and nothing hangs. Started again with its data, the master's units sell too and the item sells
// out exactly: 40 orders in PostgreSQL.
func TestMasterLostWithoutReplica(t *testing.T) {
	cfg, url := testenv.PrivateRedisCluster(t, 3, 0, 17300)
	const quantity, shards = 40, 4
	c := checkouttest.Start(t, checkouttest.Options{Quantity: quantity, Shards: shards, RedisURL: url})
	keys := make([]string, shards)
	for k := range keys {
		keys[k] = stock.ShardKeys(c.Sale.ID, "hot", k, shards).Stock()
	}
	ctx := context.Background()
	nodes, _, err := redisconn.Placement(ctx, c.App.Stock.Client(), keys)
	if err != nil {
		t.Fatal(err)
	}
	victim, stranded := nodes[0], 0
	for k, n := range nodes {
		if n == victim {
			stranded += quantity / shards
			t.Logf("shard %d (%s) on %s, killed", k, keys[k], n)
		}
	}
	if stranded == quantity {
		t.Fatalf("every shard on %s: the spread tags put them on one master (%v)", victim, nodes)
	}
	if _, err := stack.KillClusterNode(ctx, cfg, victim); err != nil {
		t.Fatal(err)
	}

	const buyers = 120
	codes, bodies, took := make([]int, buyers), make([]string, buyers), make([]time.Duration, buyers)
	var wg sync.WaitGroup
	for i := range buyers {
		wg.Go(func() {
			start := time.Now()
			codes[i], bodies[i] = c.Buy(fmt.Sprintf("b%d", i), "hot", "k")
			took[i] = time.Since(start)
		})
	}
	wg.Wait()
	won, retry := 0, 0
	var slowest time.Duration
	for i := range buyers {
		slowest = max(slowest, took[i])
		switch {
		case codes[i] == 202:
			won++
		case codes[i] == 503 && strings.Contains(bodies[i], "UNAVAILABLE"):
			if retry == 0 {
				t.Logf("first retry answer (buyer %d): %s", i, bodies[i])
			}
			retry++
		default:
			t.Errorf("buyer %d with master %s down: %d %s (want 202, or 503 UNAVAILABLE to retry)", i, victim, codes[i], bodies[i])
		}
	}
	if won != quantity-stranded || retry != buyers-won {
		t.Fatalf("with %d of %d units stranded on %s: %d reserved, %d told to retry; want %d and %d",
			stranded, quantity, victim, won, retry, quantity-stranded, buyers-(quantity-stranded))
	}
	t.Logf("master %s lost: %d units stranded, %d reserved on the live masters, %d told to retry; slowest answer %s",
		victim, stranded, won, retry, slowest.Round(time.Millisecond))

	if _, err := stack.StartClusterNode(ctx, cfg, victim); err != nil {
		t.Fatal(err)
	}
	waiting, err := verify.Settle(ctx, 30*time.Second, 100*time.Millisecond, func(ctx context.Context) ([]string, error) {
		if err := redisconn.Check(ctx, c.App.Stock.Client()); err != nil {
			return []string{err.Error()}, nil
		}
		return nil, nil
	})
	if err != nil || len(waiting) > 0 {
		t.Fatalf("the cluster never recovered: %v %v", waiting, err)
	}
	// The retries: the stranded units sell now, then the item is sold out.
	won2, soldOut := 0, 0
	for i := range buyers {
		if codes[i] == 202 {
			continue
		}
		var code int
		var body string
		for range 20 { // the client may need a moment to see the node again
			if code, body = c.Buy(fmt.Sprintf("b%d", i), "hot", "k"); code != 503 {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		switch {
		case code == 202:
			won2++
		case code == 410 && strings.Contains(body, "SOLD_OUT"):
			soldOut++
		default:
			t.Fatalf("buyer %d's retry after the master came back: %d %s", i, code, body)
		}
	}
	if won2 != stranded {
		t.Fatalf("after the master came back %d of its %d units sold (%d sold out)", won2, stranded, soldOut)
	}
	waiting, err = verify.Settle(ctx, 30*time.Second, 50*time.Millisecond, func(ctx context.Context) ([]string, error) {
		counts, err := c.App.Orders.Counts(ctx, c.Sale.ID)
		var live int64
		for _, x := range counts {
			live += x.Pending + x.Paid
		}
		if err == nil && live != quantity {
			return []string{fmt.Sprintf("%d of %d orders in PostgreSQL", live, quantity)}, nil
		}
		return nil, err
	})
	if err != nil || len(waiting) > 0 {
		t.Fatalf("orders in PostgreSQL: %v %v", waiting, err)
	}
}

// TestFailoverLosesWhatTheReplicaMissed: a Redis Cluster of its own, every master with a replica.
// The replica of the master that holds the item is frozen (SIGSTOP: it falls behind), a few more
// buyers reserve, the master is killed, and the replica, thawed, takes over without those
// reservations. They were acknowledged (202) and their orders reached PostgreSQL through Kafka, so
// reconcile must find every one of them as an order Redis does not know, and --fix restores them.
// Run once without the sale's waitReplicas and once with waitReplicas 1, which notices each
// reservation no replica acknowledged (fsctl_redis_wait_short_total) but, as the policy stands,
// still answers 202. The figures are logged for docs/stack.md ("Redis Cluster").
func TestFailoverLosesWhatTheReplicaMissed(t *testing.T) {
	for i, wait := range []int{0, 1} {
		t.Run(fmt.Sprintf("waitReplicas=%d", wait), func(t *testing.T) {
			failoverLoss(t, wait, 17500+100*i)
		})
	}
}

func failoverLoss(t *testing.T, waitReplicas, port int) {
	cfg, url := testenv.PrivateRedisCluster(t, 3, 1, port)
	sl := sale.Sale{OpensAt: time.Now().Add(-time.Minute), PerUserLimit: 1, HoldTTL: 10 * time.Minute,
		WaitReplicas: waitReplicas, Items: []sale.Item{{ID: "hot", Quantity: 100, PriceCents: 100}}}
	c := checkouttest.Start(t, checkouttest.Options{Sale: &sl, RedisURL: url})
	ctx := context.Background()
	m, err := c.App.Stock.Client().(*redis.ClusterClient).MasterForKey(ctx, stock.ItemKeys(c.Sale.ID, "hot").Stock())
	if err != nil {
		t.Fatal(err)
	}
	master := m.Options().Addr
	nodes, err := stack.ClusterNodes(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	replica := ""
	for _, n := range nodes {
		if n.Role == "replica" && n.MasterOf == master {
			replica = n.Address
		}
	}
	if replica == "" {
		t.Fatalf("no replica of %s in %+v", master, nodes)
	}
	buy := func(from, to int) (ids []uuid.UUID) {
		for i := from; i < to; i++ {
			code, body := c.Buy(fmt.Sprintf("b%d", i), "hot", "k")
			var r struct {
				OrderID string `json:"orderId"`
			}
			if err := json.Unmarshal([]byte(body), &r); code != 202 || err != nil {
				t.Fatalf("buyer %d: %d %s", i, code, body)
			}
			ids = append(ids, uuid.MustParse(r.OrderID))
		}
		return ids
	}
	before := buy(0, 10)
	// Everything so far is on the replica before it is cut off (WAIT), as the test means it: without
	// this, a replica still catching up lost the preloaded stock itself (CI saw it once).
	if n, err := m.Do(ctx, "wait", 1, 5000).Int(); err != nil || n < 1 {
		t.Fatalf("the replica of %s never caught up before the cut: %d replicas, %v", master, n, err)
	}
	// Frozen, and cut off: what the kernel had buffered for it before the cut it still reads when
	// thawed, nothing after.
	if _, err := stack.SignalClusterNode(cfg, replica, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	if err := m.Do(ctx, "client", "kill", "type", "replica").Err(); err != nil {
		t.Fatal(err)
	}
	behind := buy(10, 15) // acknowledged while the replica cannot have them
	if _, err := stack.KillClusterNode(ctx, cfg, master); err != nil {
		t.Fatal(err)
	}
	if _, err := stack.SignalClusterNode(cfg, replica, syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	// 45 s: the failover takes about 5 (CI once saw it miss 20 under the race-enabled suite's
	// load); a client that only re-read the slot map every minute (go-redis's default) would
	// still be knocking at the dead master.
	if waiting, err := followed(ctx, c, 45*time.Second); err != nil || len(waiting) > 0 {
		// Redis's own election can stall on a loaded box (CI saw it once more, at 45 s): the
		// replica's and the masters' logs say why, and a takeover forced on the replica still
		// tests what this test is for, that the client follows it and reconcile finds the loss.
		// A replica that became master but was never followed is this project's failure.
		for _, n := range nodes {
			t.Logf("log of %s (%s before the kill):\n%s", n.Address, n.Role, stack.ClusterNodeLog(cfg, n.Address, 40))
		}
		rc := redis.NewClient(&redis.Options{Addr: replica})
		defer rc.Close()
		role, rerr := rc.Do(ctx, "role").Slice()
		if rerr != nil || len(role) == 0 || role[0] == "master" {
			// Elected at the last moment (or not to be asked): the client's next slot-map reads.
			if w, err := followed(ctx, c, 5*time.Second); err != nil || len(w) > 0 {
				t.Fatalf("replica %s took over from %s (role %v %v) but the client never followed: %v %v", replica, master, role, rerr, w, err)
			}
		} else {
			t.Logf("replica %s never elected itself in 45 s (%v %v); forcing the takeover", replica, waiting, err)
			if err := rc.Do(ctx, "cluster", "failover", "takeover").Err(); err != nil {
				t.Fatal(err)
			}
			if w, err := followed(ctx, c, 30*time.Second); err != nil || len(w) > 0 {
				t.Fatalf("the client never followed the forced takeover of %s by %s: %v %v", master, replica, w, err)
			}
		}
	}
	tookOver := time.Since(killed)
	rec, err := c.App.Stock.Inspect(ctx, c.Sale.ID, "hot", 0, 1)
	if err != nil {
		t.Fatal(err)
	}
	var lost []uuid.UUID
	for _, id := range append(before, behind...) {
		if _, ok := rec.Orders[id]; !ok {
			lost = append(lost, id)
		}
	}
	for _, id := range before {
		if _, ok := rec.Orders[id]; !ok {
			t.Errorf("order %s, reserved before the replica froze, lost in the failover", id)
		}
	}

	// Every acknowledged order is in PostgreSQL; reconcile finds each one Redis lost, and only those.
	waiting, err := verify.Settle(ctx, 30*time.Second, 100*time.Millisecond, func(ctx context.Context) ([]string, error) {
		for _, id := range append(before, behind...) {
			if _, err := c.App.Orders.GetOrder(ctx, id); err != nil {
				return []string{fmt.Sprintf("order %s not in PostgreSQL: %v", id, err)}, nil
			}
		}
		return nil, nil
	})
	if err != nil || len(waiting) > 0 {
		t.Fatalf("acknowledged orders missing from PostgreSQL: %v %v", waiting, err)
	}
	rc := reconcile.Config{SaleID: c.Sale.ID, RedisURL: c.RedisURL, PostgresURL: c.PostgresURL, OrphanAge: time.Hour}
	rep, err := reconcile.Run(ctx, rc)
	if err != nil {
		t.Fatal(err)
	}
	found := map[uuid.UUID]bool{}
	for _, f := range rep.Items[0].Findings {
		if f.Check == reconcile.KindOrderWithoutBuyer {
			found[uuid.MustParse(f.Order)] = true
		}
	}
	for _, id := range lost {
		if !found[id] {
			t.Errorf("acknowledged order %s, lost by Redis in the failover, not found by reconcile", id)
		}
	}
	if len(found) != len(lost) {
		t.Errorf("reconcile reports %d orders Redis does not know, the failover lost %d", len(found), len(lost))
	}
	rc.Fix = true
	if fixed, err := reconcile.Run(ctx, rc); err != nil || !fixed.OK() || fixed.Items[0].Stock != 85 {
		t.Fatalf("--fix after the failover: %v %+v", err, fixed)
	}
	short := metricAt(t, c.Base, "fsctl_redis_wait_short_total")
	t.Logf("waitReplicas %d: replica %s took over %s after the kill; %d of %d acknowledged reservations lost by Redis (%d while the replica was frozen), all %d found by reconcile and restored by --fix; reserves no replica acknowledged: %v",
		waitReplicas, replica, tookOver.Round(100*time.Millisecond), len(lost), len(before)+len(behind), len(behind), len(found), short)
	if len(lost) != len(behind) {
		t.Errorf("lost %d, want the %d reserved while the replica was frozen", len(lost), len(behind))
	}
	if waitReplicas > 0 && short < float64(len(behind)) {
		t.Errorf("waitReplicas %d counted %v reserves short of replicas, want at least %d", waitReplicas, short, len(behind))
	}
}

// TestPurchasesDuringResharding: the slot of one of the hot item's shards moves to another master
// while buyers buy, key by key (CLUSTER SETSLOT MIGRATING/IMPORTING, MIGRATE one key at a time,
// then SETSLOT NODE), so for a while the shard's keys are split over two nodes and its scripts are
// answered ASK or TRYAGAIN. Every buyer still gets a definitive answer or a retry (202, 410 or 503,
// never a 500), the item sells exactly its units, and Redis and PostgreSQL agree afterwards.
func TestPurchasesDuringResharding(t *testing.T) {
	_, url := testenv.PrivateRedisCluster(t, 3, 0, 17700)
	const quantity, shards, buyers = 60, 4, 240
	c := checkouttest.Start(t, checkouttest.Options{Quantity: quantity, Shards: shards, RedisURL: url})
	ctx := context.Background()
	cc := c.App.Stock.Client().(*redis.ClusterClient)
	key := stock.ShardKeys(c.Sale.ID, "hot", 0, shards).Stock()
	slot := redisconn.KeySlot(key)
	src, err := cc.MasterForKey(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	slots, err := cc.ClusterSlots(ctx).Result() //nolint:staticcheck // CLUSTER SLOTS answers on every Redis this test meets
	if err != nil {
		t.Fatal(err)
	}
	var dst *redis.Client
	for _, r := range slots {
		if addr := r.Nodes[0].Addr; addr != src.Options().Addr && dst == nil {
			dst = redis.NewClient(&redis.Options{Addr: addr})
		}
	}
	if dst == nil {
		t.Fatalf("no other master than %s in %+v", src.Options().Addr, slots)
	}
	defer dst.Close()
	srcNode := redis.NewClient(&redis.Options{Addr: src.Options().Addr})
	defer srcNode.Close()
	srcID, _ := srcNode.Do(ctx, "cluster", "myid").Text()
	dstID, _ := dst.Do(ctx, "cluster", "myid").Text()

	codes, bodies := make([]int, buyers), make([]string, buyers)
	var wg sync.WaitGroup
	start := time.Now()
	for i := range buyers {
		wg.Go(func() {
			time.Sleep(time.Until(start.Add(time.Duration(i) * 10 * time.Millisecond))) // 2.4 s of buyers
			codes[i], bodies[i] = c.Buy(fmt.Sprintf("b%d", i), "hot", "k")
		})
	}
	// The migration, while the buyers come.
	time.Sleep(300 * time.Millisecond)
	host, port, _ := strings.Cut(dst.Options().Addr, ":")
	must := func(err error) {
		if err != nil {
			t.Fatalf("resharding slot %d from %s to %s: %v", slot, src.Options().Addr, dst.Options().Addr, err)
		}
	}
	must(dst.Do(ctx, "cluster", "setslot", slot, "importing", srcID).Err())
	must(srcNode.Do(ctx, "cluster", "setslot", slot, "migrating", dstID).Err())
	moved := 0
	for {
		keys, err := srcNode.ClusterGetKeysInSlot(ctx, slot, 1).Result()
		must(err)
		if len(keys) == 0 {
			break
		}
		must(srcNode.Migrate(ctx, host, port, keys[0], 0, 5*time.Second).Err())
		moved++
		time.Sleep(20 * time.Millisecond) // the shard's keys stay split for a while
	}
	for _, n := range []*redis.Client{srcNode, dst} {
		must(n.Do(ctx, "cluster", "setslot", slot, "node", dstID).Err())
	}
	_ = cc.ForEachMaster(ctx, func(ctx context.Context, m *redis.Client) error {
		return m.Do(ctx, "cluster", "setslot", slot, "node", dstID).Err()
	})
	wg.Wait()
	t.Logf("slot %d of shard 0 moved from %s to %s key by key (%d keys) during the burst", slot, src.Options().Addr, dst.Options().Addr, moved)

	won, soldOut, retry := 0, 0, 0
	for i := range buyers {
		switch {
		case codes[i] == 202:
			won++
		case codes[i] == 410 && strings.Contains(bodies[i], "SOLD_OUT"):
			soldOut++
		case codes[i] == 503:
			if retry == 0 {
				t.Logf("a retry answer during the resharding: %s", bodies[i])
			}
			retry++
		default:
			t.Errorf("buyer %d during the resharding: %d %s", i, codes[i], bodies[i])
		}
	}
	t.Logf("during the resharding: %d reserved, %d sold out, %d told to retry", won, soldOut, retry)
	// The retries, now that the slot has settled, take what is left.
	for i := range buyers {
		if codes[i] != 503 {
			continue
		}
		if code, _ := c.Buy(fmt.Sprintf("b%d", i), "hot", "k"); code == 202 {
			won++
		}
	}
	if won != quantity {
		t.Fatalf("%d units sold of %d after the resharding and the retries", won, quantity)
	}
	rc := reconcile.Config{SaleID: c.Sale.ID, RedisURL: c.RedisURL, PostgresURL: c.PostgresURL, OrphanAge: time.Hour}
	waiting, err := verify.Settle(ctx, 30*time.Second, 200*time.Millisecond, func(ctx context.Context) ([]string, error) {
		rep, err := reconcile.Run(ctx, rc)
		if err != nil {
			return []string{err.Error()}, nil
		}
		if !rep.OK() || rep.Items[0].Counts.Pending != quantity {
			return []string{fmt.Sprintf("%+v", rep.Items[0])}, nil
		}
		return nil, nil
	})
	if err != nil || len(waiting) > 0 {
		t.Fatalf("after the resharding Redis and PostgreSQL disagree: %v %v", waiting, err)
	}
}

// followed waits until the sale's Redis client reaches the item's stock again after a failover.
func followed(ctx context.Context, c *checkouttest.Checkout, limit time.Duration) ([]string, error) {
	return verify.Settle(ctx, limit, 100*time.Millisecond, func(ctx context.Context) ([]string, error) {
		if err := c.App.Stock.Client().Ping(ctx).Err(); err != nil {
			return []string{err.Error()}, nil
		}
		if _, err := c.App.Stock.Inspect(ctx, c.Sale.ID, "hot", 0, 1); err != nil {
			return []string{err.Error()}, nil
		}
		return nil, nil
	})
}
