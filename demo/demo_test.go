package demo_test

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/fsctl/fsctl/demo"
	"github.com/fsctl/fsctl/orders"
	"github.com/fsctl/fsctl/outcome"
	"github.com/fsctl/fsctl/sale"
	"github.com/fsctl/fsctl/server"
	"github.com/fsctl/fsctl/stack"
	"github.com/fsctl/fsctl/steps"
	"github.com/fsctl/fsctl/testenv"
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
			Brokers: testenv.KafkaBrokers(t), OrdersTopic: testenv.KafkaTopic(t, 2), DeadLetterTopic: testenv.KafkaTopic(t, 1),
			ConsumerGroup: testenv.ID(t, "g"), JWTSecret: []byte("demo-test-secret-0123456789abcdef"),
		},
		Sale: sl, ItemID: "console", Buyers: 300, Conns: 32, Settle: 30 * time.Second, Room: rm,
	}, &out, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Problems) != 0 {
		t.Fatalf("invariants broken: %v", rep.Problems)
	}
	if rep.Outcomes[outcome.Reserved] != 20 || rep.Outcomes[outcome.SoldOut] != 280 {
		t.Fatalf("outcomes %v, want 20 reserved and 280 sold out", rep.Outcomes)
	}
	if rep.Counts.Pending != 20 || rep.Counts.Sold != 20 || rep.Stock != 0 || rep.Holds != 20 {
		t.Fatalf("report %+v", rep)
	}
	if rc := rep.Reconcile; !rc.OK() || len(rc.Items) != 1 || rc.Items[0].Holds != 20 || rc.Kafka == nil {
		t.Fatalf("reconcile after the demo: %+v", rc)
	}
	if !strings.Contains(out.String(), "300 buyers") {
		t.Fatalf("progress output %q", out.String())
	}
	var names []string
	for _, s := range rep.Steps {
		names = append(names, s.Name)
	}
	if strings.Join(names, ",") != "sale,burst,settle,verify,reconcile" || !steps.OK(rep.Steps) {
		t.Fatalf("steps %+v", rep.Steps)
	}
}

// TestCheck plants one fault per invariant and checks that Check names exactly that one, and that a
// report that keeps them all passes.
func TestCheck(t *testing.T) {
	ok := demo.Report{
		Outcomes: map[outcome.Code]int{outcome.Reserved: 10, outcome.SoldOut: 5},
		Quantity: 10, Stock: 0, Holds: 10,
		Counts: orders.ItemCounts{Quantity: 10, Sold: 10, Pending: 10},
	}
	if p := demo.Check(ok); len(p) != 0 {
		t.Fatalf("a correct sale reported %v", p)
	}
	tests := []struct {
		plant func(*demo.Report)
		want  []string // the rules Check must name, in its order
	}{
		// 11 buyers told RESERVED for 10 units, and PostgreSQL and Redis recorded all 11: the
		// stock went below zero to give the 11th.
		{func(r *demo.Report) {
			r.Outcomes[outcome.Reserved] = 11
			r.Counts.Pending, r.Counts.Sold, r.Holds, r.Stock = 11, 11, 11, -1
		}, []string{"oversold", "negative shard"}},
		{func(r *demo.Report) { r.Counts.Pending, r.Counts.Sold, r.Holds, r.Stock = 9, 9, 9, 1 }, []string{"durability"}},
		{func(r *demo.Report) { r.Counts.Sold = 8 }, []string{"sold counter"}},
		{func(r *demo.Report) { r.Stock = 1 }, []string{"units lost or doubled"}},
		{func(r *demo.Report) { r.Holds, r.Stock = 9, 1 }, []string{"holds"}},
	}
	for _, tc := range tests {
		t.Run(tc.want[0], func(t *testing.T) {
			r := ok
			r.Outcomes = map[outcome.Code]int{outcome.Reserved: 10}
			tc.plant(&r)
			p := demo.Check(r)
			if len(p) != len(tc.want) {
				t.Fatalf("Check(%+v) = %q, want %q", r, p, tc.want)
			}
			for i, w := range tc.want {
				if !strings.HasPrefix(p[i], w+": ") {
					t.Fatalf("Check(%+v) = %q, want %q", r, p, tc.want)
				}
			}
		})
	}
}
