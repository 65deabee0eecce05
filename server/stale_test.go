package server_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/fsctl/fsctl/internal/checkout/events"
	"github.com/fsctl/fsctl/internal/checkout/stock"
	"github.com/fsctl/fsctl/internal/contract/outcome"
	"github.com/fsctl/fsctl/internal/harness/testenv/eventually"
	"github.com/fsctl/fsctl/internal/platform/kafkaconn"
	"github.com/fsctl/fsctl/reconcile"
	checkouttest "github.com/fsctl/fsctl/server/servertest"
)

// TestStaleHandOffIsNotRecorded replays what a game day's broker kill did: a hand-off the server
// saw fail (it released the hold and forgot the key) is delivered by Kafka after all, ahead of the
// buyer's retry. The stale event must not become an order: it would hold the buyer's slot and
// PostgreSQL would refuse the retry the buyer was told RESERVED for.
func TestStaleHandOffIsNotRecorded(t *testing.T) {
	c := checkouttest.Start(t, checkouttest.Options{Quantity: 5})
	ctx := context.Background()
	stale := uuid.Must(uuid.NewV7())
	rv, err := c.App.Stock.Reserve(ctx, stock.Request{SaleID: c.Sale.ID, ItemID: "hot", UserID: "u", IdemKey: "k", OrderID: stale})
	if err != nil || rv.Outcome != outcome.Reserved {
		t.Fatalf("reserve: %+v %v", rv, err)
	}
	if _, err := c.App.Stock.Release(ctx, stock.Release{SaleID: c.Sale.ID, ItemID: "hot", OrderID: stale, Status: "FAILED",
		ForgetUser: "u", ForgetKey: "k"}); err != nil {
		t.Fatal(err)
	}
	pub, err := events.NewPublisher(kafkaconn.Conn{Brokers: c.Brokers}, c.OrdersTopic)
	if err != nil {
		t.Fatal(err)
	}
	defer pub.Close()
	if err := pub.PublishOrderPlaced(ctx, events.OrderPlaced{OrderID: stale, SaleID: c.Sale.ID, ItemID: "hot", UserID: "u",
		CreatedAt: time.Now(), ExpiresAt: rv.ExpiresAt, IdemKey: "k"}); err != nil {
		t.Fatal(err)
	}
	code, body := c.Buy("u", "hot", "k")
	if code != 202 {
		t.Fatalf("the retry: %d %s", code, body)
	}
	eventually.OK(t, 20*time.Second, func() error {
		counts, err := c.App.Orders.Counts(ctx, c.Sale.ID)
		if err != nil || counts[0].Pending != 1 {
			return fmt.Errorf("the retry's order never reached PostgreSQL: %+v %v", counts, err)
		}
		return nil
	})
	if _, err := c.App.Orders.GetOrder(ctx, stale); outcome.CodeOf(err) != outcome.NotFound {
		t.Fatalf("the stale order was recorded: %v", err)
	}
	reps, err := reconcile.Sale(ctx, c.App.Stock, c.App.Orders, c.Sale)
	if err != nil || len(reps[0].Problems) > 0 || reps[0].Stock != 4 {
		t.Fatalf("after the retry: %+v %v", reps, err)
	}
}
