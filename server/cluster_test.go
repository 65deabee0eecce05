package server_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fsctl/fsctl/stock"
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
