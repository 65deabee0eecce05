package demo_test

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/fsctl/fsctl/demo"
	"github.com/fsctl/fsctl/internal/contract/outcome"
	"github.com/fsctl/fsctl/internal/contract/sale"
	"github.com/fsctl/fsctl/internal/harness/stack"
	"github.com/fsctl/fsctl/internal/harness/testenv"
	"github.com/fsctl/fsctl/internal/platform/kafkaconn"
	"github.com/fsctl/fsctl/pipeline/steps"
	"github.com/fsctl/fsctl/server"
)

// TestRun is the main job end to end on the real services, small: 300 buyers for 20 units, once
// straight at the purchase path and once through a waiting room with a proof of work.
func TestRun(t *testing.T) {
	for name, rm := range map[string]*sale.Room{
		"direct":       nil,
		"waiting room": {Enabled: true, AdmissionRate: 500, MaxActive: 100, FairStart: sale.FairStartFIFO, PowDifficulty: 6},
	} {
		t.Run(name, func(t *testing.T) { testRun(t, rm) })
	}
}

func testRun(t *testing.T, rm *sale.Room) {
	testenv.Redis(t)
	pg := testenv.Postgres(t)
	sl := sale.Sale{ID: testenv.ID(t, "demo"), Items: []sale.Item{{ID: "console", Quantity: 20}}, OpensAt: time.Now()}
	sl.Normalize()
	var out strings.Builder
	rep, err := demo.Run(context.Background(), demo.Config{
		App: server.AppConfig{
			Server: server.DefaultConfig(), RedisURL: stack.EndpointsFromEnv().RedisURL, PostgresURL: pg,
			Kafka: kafkaconn.Conn{Brokers: testenv.KafkaBrokers(t)}, OrdersTopic: testenv.KafkaTopic(t, 2), DeadLetterTopic: testenv.KafkaTopic(t, 1),
			ConsumerGroup: testenv.ID(t, "g"), JWTSecret: []byte("demo-test-secret-0123456789abcdef"),
		},
		Sale: sl, ItemID: "console", Buyers: 300, Conns: 32, Settle: 30 * time.Second, Room: rm,
	}, &out, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Passed || len(rep.Failures) != 0 || len(rep.Verdicts) < 5 {
		t.Fatalf("invariants broken: %v (verdicts %+v)", rep.Failures, rep.Verdicts)
	}
	if rep.Outcomes[outcome.Reserved] != 20 || rep.Outcomes[outcome.SoldOut] != 280 {
		t.Fatalf("outcomes %v, want 20 reserved and 280 sold out", rep.Outcomes)
	}
	if it := rep.Items[0]; it.Reserved != 20 || it.Live != 20 || it.RedisLeft != 0 || !rep.Settled {
		t.Fatalf("item %+v settled %v", it, rep.Settled)
	}
	if rc := rep.Reconcile; rc == nil || !rc.OK() || !rc.OrderByOrder || len(rc.Items) != 1 || rc.Items[0].Holds != 20 || rc.Kafka == nil {
		t.Fatalf("reconcile after the demo: %+v", rc)
	}
	if !strings.Contains(out.String(), "300 buyers") {
		t.Fatalf("progress output %q", out.String())
	}
	var names []string
	for _, s := range rep.Steps {
		names = append(names, s.Name)
	}
	if strings.Join(names, ",") != "sale,burst,settle,reconcile,invariants" || !steps.OK(rep.Steps) {
		t.Fatalf("steps %+v", rep.Steps)
	}
}
