package server_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

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
