package benchmarks

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/fsctl/fsctl/internal/checkout/orders"
	"github.com/fsctl/fsctl/internal/checkout/stock"
	"github.com/fsctl/fsctl/internal/harness/stack"
	"github.com/fsctl/fsctl/internal/platform/kafkaconn"
	"github.com/fsctl/fsctl/reconcile"
	checkouttest "github.com/fsctl/fsctl/server/servertest"
)

// reconcileOrders is how many pending orders the reconciled sale holds: a 10,000-unit sale a
// fifth of the way through.
const reconcileOrders = 2000

// reconciledSale is a 4-shard sale with reconcileOrders pending orders, reserved in Redis and
// recorded in PostgreSQL directly (no HTTP, no Kafka), consistent on both sides.
func reconciledSale(b *testing.B) (*checkouttest.Checkout, reconcile.Config) {
	b.Helper()
	c := checkouttest.Start(b, checkouttest.Options{Quantity: 10_000, Shards: 4})
	ctx := context.Background()
	var batch []orders.Placement
	for i := range reconcileOrders {
		user := fmt.Sprintf("buyer-%d", i)
		rv, err := c.App.Stock.Reserve(ctx, stock.Request{SaleID: c.Sale.ID, ItemID: "hot", UserID: user,
			IdemKey: "k", OrderID: uuid.Must(uuid.NewV7()), Shards: 4})
		if err != nil {
			b.Fatal(err)
		}
		batch = append(batch, orders.Placement{OrderID: rv.OrderID, SaleID: c.Sale.ID, ItemID: "hot", UserID: user,
			Shard: rv.Shard, CreatedAt: time.Now(), ExpiresAt: rv.ExpiresAt})
		if len(batch) == 500 || i == reconcileOrders-1 {
			if _, err := c.App.Orders.PlaceBatch(ctx, batch); err != nil {
				b.Fatal(err)
			}
			batch = batch[:0]
		}
	}
	return c, reconcile.Config{SaleID: c.Sale.ID, RedisURL: stack.EndpointsFromEnv().RedisURL, PostgresURL: c.PostgresURL,
		Kafka: kafkaconn.Conn{Brokers: c.Brokers}, OrdersTopic: c.OrdersTopic, DeadLetterTopic: c.DeadLetterTopic, ConsumerGroup: c.ConsumerGroup}
}

// BenchmarkReconcile is one whole `fsctl reconcile` (connect, Kafka, every order of both sides)
// of a consistent sale with 2,000 pending orders over 4 shards.
func BenchmarkReconcile(b *testing.B) {
	_, cfg := reconciledSale(b)
	for b.Loop() {
		rep, err := reconcile.Run(context.Background(), cfg)
		if err != nil || !rep.OK() {
			b.Fatalf("reconcile: %v %+v", err, rep.Items)
		}
	}
}

// BenchmarkReconcileCounts is the baseline: the aggregate check (counters and counts only,
// reconcile.Sale) that every test ended with before order-by-order reconciliation.
func BenchmarkReconcileCounts(b *testing.B) {
	c, _ := reconciledSale(b)
	for b.Loop() {
		reps, err := reconcile.Sale(context.Background(), c.App.Stock, c.App.Orders, c.Sale)
		if err != nil || len(reps[0].Problems) > 0 {
			b.Fatalf("reconcile.Sale: %v %+v", err, reps)
		}
	}
}
