package gameday

import (
	"context"
	"errors"
	"syscall"
	"testing"
	"time"

	"github.com/fsctl/fsctl/internal/harness/stack"
)

// Ctrl-C in the middle of the burst: Run returns, every server process it started is gone and,
// with TeardownAlways, so is every service of the stack. (The next test brings the stack back.)
func TestCancelMidScenarioTearsEverythingDown(t *testing.T) {
	cfg := privateStack(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var fleet *Fleet
	sc := testScenario("cancel", Step{At: 0, Fault: cancelFault{cancel}})
	sc.Buyers = 4000 // far more than the run lives to release
	rep, err := Run(ctx, Config{
		Scenario: sc, Stack: cfg, Teardown: TeardownAlways, Fsctl: fsctl(t), WorkDir: t.TempDir(), Out: lineWriter{t},
		OnFleet: func(f *Fleet) { fleet = f },
	})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	if rep.Passed {
		t.Error("a cancelled game day passed")
	}
	if fleet == nil {
		t.Fatal("the fleet never started")
	}
	if pids := fleet.PIDs(); len(pids) > 0 {
		t.Errorf("server processes still running: %v", pids)
	}
	for _, in := range fleet.all {
		if syscall.Kill(in.PID(), 0) == nil {
			t.Errorf("%s (pid %d) still exists", in.Name, in.PID())
		}
	}
	sts, err := stack.Status(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range sts {
		if s.Running {
			t.Errorf("%s still running (pid %d) after the cancelled game day", s.Name, s.PID)
		}
	}
}

// cancelFault is Ctrl-C as a step, so the cancel lands while buyers are in flight.
type cancelFault struct{ cancel context.CancelFunc }

func (cancelFault) Name() string     { return "cancel" }
func (cancelFault) Describe() string { return "Ctrl-C" }
func (f cancelFault) Apply(context.Context, *Env) (string, error) {
	time.Sleep(500 * time.Millisecond)
	f.cancel()
	return "cancelled", nil
}
