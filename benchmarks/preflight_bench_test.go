package benchmarks

import (
	"context"
	"testing"
	"time"

	"github.com/fsctl/fsctl/internal/harness/stack"
	"github.com/fsctl/fsctl/internal/platform/kafkaconn"
	"github.com/fsctl/fsctl/preflight"
	checkouttest "github.com/fsctl/fsctl/server/servertest"
)

// BenchmarkPreflight is one whole preflight — connect to every service, every check, close —
// against a healthy local stack with a running checkout and a 4-shard, 2-item sale. The issue's
// target is under 2 s.
func BenchmarkPreflight(b *testing.B) {
	c := checkouttest.Start(b, checkouttest.Options{Quantity: 1000, Shards: 4})
	cfg := preflight.Config{
		SaleID: c.Sale.ID, RedisURL: stack.EndpointsFromEnv().RedisURL, PostgresURL: c.PostgresURL,
		Kafka: kafkaconn.Conn{Brokers: c.Brokers}, OrdersTopic: c.OrdersTopic, DeadLetterTopic: c.DeadLetterTopic,
		ConsumerGroup: c.ConsumerGroup, SwitchesKey: c.SwitchesKey, Servers: []string{c.Base},
	}
	ctx := context.Background()
	var worst time.Duration
	for b.Loop() {
		start := time.Now()
		rep, err := preflight.Run(ctx, cfg)
		if err != nil {
			b.Fatal(err)
		}
		if !rep.Ready(false) {
			b.Fatalf("not ready: %+v", rep.Results)
		}
		worst = max(worst, time.Since(start))
	}
	b.ReportMetric(float64(worst.Milliseconds()), "worst-ms")
}
