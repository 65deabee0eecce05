package gameday

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"time"

	"github.com/fsctl/fsctl/internal/harness/stack"
)

// SeedsConfig is a run of several chaos seeds one after the other on one stack (fsctl gameday
// --chaos --seeds N).
type SeedsConfig struct {
	// Chaos is what every seed is drawn with; its Seed is the first seed's, the next ones follow.
	Chaos ChaosConfig
	// Seeds is how many seeds run.
	Seeds int
	// Budget replaces the parts it gives of every seed's budget (Scenario.WithBudget); a negative
	// part is not given.
	Budget Budget
	// Run is what each seed plays with: its Stack, Out, SoakEvery and the rest. Its WorkDir holds
	// a folder per seed (seed-N, the seed's reports); its Teardown says what happens to the stack
	// after the last seed (each seed leaves it running); its Scenario is each seed's draw.
	Run Config
	// WarRoom records each seed's war room timeline into its folder (Play).
	WarRoom bool
	// Summary, when set, is handed the seeds' report once the last seed ran and before the stack
	// is stopped, so that what it writes comes before the teardown's lines.
	Summary func(SeedsReport) error
}

// RunSeeds plays c.Seeds chaos runs, from c.Chaos.Seed on, on one stack (brought up by the
// first, stopped at the end as c.Run.Teardown says), and sums them up: a SeedRun per seed that
// ran. It stops early on Ctrl-C or when the stack did not come up. The error is one that kept
// the seeds from running or being summed up; that a seed failed is the report's to say (Err).
func RunSeeds(ctx context.Context, c SeedsConfig) (SeedsReport, error) {
	if c.Run.Out == nil {
		c.Run.Out = io.Discard
	}
	if c.Run.Teardown == "" {
		c.Run.Teardown = TeardownAuto
	}
	down, err := servicesDown(ctx, c.Run.Stack)
	if err != nil {
		return nil, err
	}
	defer c.teardown(ctx, len(down) > 0)
	runs, err := c.play(ctx)
	if err != nil {
		return nil, err
	}
	if c.Summary != nil {
		if err := c.Summary(runs); err != nil {
			return runs, err
		}
	}
	return runs, nil
}

// play runs the seeds one after the other, each leaving the stack running.
func (c SeedsConfig) play(ctx context.Context) (SeedsReport, error) {
	out := c.Run.Out
	var runs SeedsReport
	for i := range c.Seeds {
		ch := c.Chaos
		ch.Seed += uint64(i)
		sc, err := Chaos(ch)
		if err == nil {
			sc = sc.WithBudget(c.Budget)
			err = sc.Check()
		}
		if err != nil {
			return nil, err
		}
		cfg := c.Run
		cfg.Scenario, cfg.Teardown, cfg.WorkDir = sc, TeardownNever, filepath.Join(c.Run.WorkDir, fmt.Sprintf("seed-%d", ch.Seed))
		fmt.Fprintf(out, "--- chaos seed %d (%d of %d)\n", ch.Seed, i+1, c.Seeds)
		rep, runErr := Play(ctx, cfg, c.WarRoom)
		if rep == nil {
			return nil, runErr
		}
		run := summarizeSeed(rep, filepath.Join(cfg.WorkDir, "report.md"))
		if runErr != nil && rep.Error == "" {
			run.Failed = append(run.Failed, runErr.Error())
		}
		runs = append(runs, run)
		fmt.Fprintf(out, "--- chaos seed %d: %s (%d acknowledged orders checked, %d missing)\n", ch.Seed, passWord(run.Passed), run.Acknowledged, run.Missing)
		if ctx.Err() != nil {
			break
		}
		if len(rep.Phases) > 0 && rep.Phases[0].Name == "stack" && rep.Phases[0].Error != "" {
			fmt.Fprintf(out, "--- the stack did not come up, so the other seeds are not played: %s\n", rep.Phases[0].Error)
			break
		}
	}
	return runs, nil
}

// teardown stops the stack after the last seed if the policy says so (Teardown.stops), also
// when the run was cancelled.
func (c SeedsConfig) teardown(ctx context.Context, started bool) {
	if !c.Run.Teardown.stops(started) {
		return
	}
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Minute)
	defer cancel()
	if err := stack.Down(dctx, c.Run.Stack); err != nil {
		fmt.Fprintf(c.Run.Out, "stack down: %v\n", err)
	}
}

// Err says which seeds failed, nil when every one passed.
func (runs SeedsReport) Err() error {
	var failed []string
	for _, r := range runs {
		if !r.Passed {
			failed = append(failed, fmt.Sprint(r.Seed))
		}
	}
	if len(failed) == 0 {
		return nil
	}
	return fmt.Errorf("%d of %d chaos seed(s) failed: %s", len(failed), len(runs), strings.Join(failed, ", "))
}

// Verdict is the worst of the seeds' verdicts (Report.Verdict); VerdictPassed when all passed.
func (runs SeedsReport) Verdict() Verdict {
	worst := VerdictPassed
	for _, r := range runs {
		if !r.Passed {
			worst = max(worst, r.verdict)
		}
	}
	return worst
}
