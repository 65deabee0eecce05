package pipeline

import (
	"context"
	"strings"
	"testing"

	"github.com/fsctl/fsctl/internal/contract/finding"
	"github.com/fsctl/fsctl/reconcile"
)

// TestInvariants plants one fault per rule the tail judges and checks that exactly that one is
// named, and that a run that keeps them all passes.
func TestInvariants(t *testing.T) {
	good := func() *Run {
		return &Run{cfg: Config{}, Result: Result{
			Items:     []Item{{Item: "hot", Stock: 10, Reserved: 4, LiveBefore: 1, Live: 5, RedisLeft: 5}},
			Verdicts:  []finding.Finding{finding.Verdict("no oversell (responses)", nil)},
			Settled:   true,
			Reconcile: &reconcile.Report{Items: []reconcile.ItemReport{{ItemID: "hot", Problems: []string{}}}},
		}}
	}
	if _, ok, err := good().Invariants(context.Background()); !ok || err != nil {
		t.Fatalf("a run that keeps every rule failed: %v", err)
	}
	for _, tc := range []struct {
		name  string
		plant func(*Run)
		want  string
	}{
		{"a verdict", func(r *Run) { r.Verdicts[0] = finding.Verdict("no oversell (responses)", []string{"11 for 10"}) }, "no oversell (responses): 11 for 10"},
		{"the settle", func(r *Run) { r.Settled, r.SettleWait = false, "lag 3" }, "did not settle"},
		{"reconcile", func(r *Run) { r.Result.Reconcile.Items[0].Problems = []string{"holds: 1"} }, "reconcile: item hot: holds: 1"},
		{"reconcile missing", func(r *Run) { r.Result.Reconcile = nil }, "reconcile: did not run"},
		{"oversold answers", func(r *Run) { r.Items[0].Reserved, r.Items[0].Live = 10, 11 }, "item hot: oversold"},
		{"durability", func(r *Run) { r.Items[0].Live = 4 }, "item hot: durability"},
		{"own check", func(r *Run) {
			r.cfg.Checks = func(context.Context) ([]finding.Finding, error) {
				return []finding.Finding{finding.Verdict("every reserved answer ended", []string{"o1: still PENDING"})}, nil
			}
		}, "every reserved answer ended: o1: still PENDING"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := good()
			tc.plant(r)
			_, ok, err := r.Invariants(context.Background())
			if ok || err != nil || len(r.Failures) != 1 || !strings.Contains(r.Failures[0], tc.want) {
				t.Fatalf("ok=%v err=%v failures %q, want one naming %q", ok, err, r.Failures, tc.want)
			}
		})
	}
	// Once orders may end after the burst and their units sell again (Ended), fewer live orders
	// than RESERVED answers, and more answers than units, are no fault: blast's state check
	// judges each answer instead. More live orders than units still is.
	r := good()
	r.cfg.Ended, r.Items[0].Live, r.Items[0].Reserved = true, 2, 30
	if _, ok, _ := r.Invariants(context.Background()); !ok {
		t.Fatalf("Ended: orders that ended and sold again failed the run: %q", r.Failures)
	}
	r.Items[0].Live = 11
	if _, ok, _ := r.Invariants(context.Background()); ok || len(r.Failures) != 1 || !strings.Contains(r.Failures[0], "oversold: 11 live orders for 10 units") {
		t.Fatalf("Ended: 11 live orders for 10 units: %q", r.Failures)
	}
}
