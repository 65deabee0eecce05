package server_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fsctl/fsctl/redisconn"
	"github.com/fsctl/fsctl/stack"
	"github.com/fsctl/fsctl/stock"
	"github.com/fsctl/fsctl/testenv"
	checkouttest "github.com/fsctl/fsctl/testenv/checkout"
	"github.com/fsctl/fsctl/verify"
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
