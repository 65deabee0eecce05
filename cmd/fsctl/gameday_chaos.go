package main

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/fsctl/fsctl/gameday"
	"github.com/fsctl/fsctl/stack"
	"github.com/fsctl/fsctl/table"
)

// chaosRun is one seed of `fsctl gameday --chaos --seeds N`.
type chaosRun struct {
	Seed   uint64 `json:"seed"`
	Passed bool   `json:"passed"`
	// Faults counts the faults the nemesis applied, by kind.
	Faults       map[string]int `json:"faults"`
	Acknowledged int            `json:"acknowledged"`
	Missing      int            `json:"missing"`
	Undecided    string         `json:"undecided"`
	Outage       time.Duration  `json:"outage"`
	Took         time.Duration  `json:"took"`
	Replay       string         `json:"replay,omitempty"`
	Failed       []string       `json:"failed,omitempty"`
	Report       string         `json:"report"`
	verdict      gameday.Verdict
	share        float64 // the undecided share; -1 with no buyers
}

// runChaosSeeds plays o.seeds chaos runs, from --seed on, on one stack (brought up once, stopped
// at the end as --teardown says), and sums them up: faults by kind, acknowledged orders checked,
// and every failing seed with the command that replays it.
func runChaosSeeds(cmd *cobra.Command, o *gamedayOptions, td gameday.Teardown, dir string) error {
	ctx := cmd.Context()
	out := cmd.OutOrStdout()
	progress := o.output.beside(out, cmd.ErrOrStderr())
	scfg, err := o.stack.config(cmd, progress)
	if err != nil {
		return err
	}
	before, err := stack.Status(ctx, scfg)
	if err != nil {
		return err
	}
	started := slices.ContainsFunc(before, func(s stack.ServiceStatus) bool { return !s.Running })
	defer func() {
		if td == gameday.TeardownAlways || td == gameday.TeardownAuto && started {
			dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Minute)
			defer cancel()
			if err := stack.Down(dctx, scfg); err != nil {
				fmt.Fprintf(progress, "stack down: %v\n", err)
			}
		}
	}()
	var runs chaosRuns
	for i := range o.seeds {
		c := o.chaosCfg
		c.Seed += uint64(i)
		sc, err := gameday.Chaos(c)
		if err == nil {
			err = o.applyBudget(cmd.Flags(), &sc)
		}
		if err != nil {
			return usageError(err)
		}
		seedDir := filepath.Join(dir, fmt.Sprintf("seed-%d", c.Seed))
		fmt.Fprintf(progress, "--- chaos seed %d (%d of %d)\n", c.Seed, i+1, o.seeds)
		rep, runErr := playGameday(cmd, o, sc, gameday.TeardownNever, seedDir)
		if rep == nil {
			return runErr
		}
		run := summarizeChaos(rep, filepath.Join(seedDir, "report.md"))
		if runErr != nil && rep.Error == "" {
			run.Failed = append(run.Failed, runErr.Error())
		}
		runs = append(runs, run)
		fmt.Fprintf(progress, "--- chaos seed %d: %s (%d acknowledged orders checked, %d missing)\n", c.Seed, passWord(run.Passed), run.Acknowledged, run.Missing)
		if ctx.Err() != nil {
			break
		}
		if len(rep.Phases) > 0 && rep.Phases[0].Name == "stack" && rep.Phases[0].Error != "" {
			fmt.Fprintf(progress, "--- the stack did not come up, so the other seeds are not played: %s\n", rep.Phases[0].Error)
			break
		}
	}
	if err := writeReport(out, o.output, runs); err != nil {
		return err
	}
	var failed []string
	worst := gameday.VerdictPassed
	for _, r := range runs {
		if !r.Passed {
			failed = append(failed, fmt.Sprint(r.Seed))
			worst = max(worst, r.verdict)
		}
	}
	if len(failed) > 0 {
		return verdictError(worst, fmt.Errorf("%d of %d chaos seed(s) failed: %s", len(failed), len(runs), strings.Join(failed, ", ")))
	}
	return nil
}

func summarizeChaos(rep *gameday.Report, report string) chaosRun {
	r := chaosRun{Seed: rep.Seed, Passed: rep.Passed, verdict: rep.Verdict(), Faults: map[string]int{}, Acknowledged: rep.Acknowledged, Missing: rep.Missing,
		Outage: rep.Availability.Outage, Took: rep.Took, Report: report, Failed: rep.Failures(), share: -1}
	if rep.Availability.Buyers > 0 {
		r.share = rep.Availability.Share()
		r.Undecided = fmt.Sprintf("%.1f%%", 100*r.share)
	}
	for _, s := range rep.Steps {
		r.Faults[s.Kind]++
	}
	if !rep.Passed {
		r.Replay = rep.Replay
	}
	return r
}

// chaosRuns is the report of several seeds.
type chaosRuns []chaosRun

// WriteJSON writes the runs as one JSON array.
func (runs chaosRuns) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode([]chaosRun(runs))
}

// Render writes a row per seed, the totals, and each failing seed with its replay command.
func (runs chaosRuns) Render(w io.Writer) error {
	// Narrow: what is undecided wraps, then the run's length and its longest outage go.
	t := table.New(w, "seed", "result", "faults", "acknowledged", "missing", "undecided", "longest outage", "took").
		Wrap("undecided", 0).Drop("took", "longest outage")
	total := map[string]int{}
	acked, missing, passed := 0, 0, 0
	for _, r := range runs {
		n := 0
		for k, c := range r.Faults {
			total[k] += c
			n += c
		}
		acked += r.Acknowledged
		missing += r.Missing
		if r.Passed {
			passed++
		}
		_ = t.Append(fmt.Sprint(r.Seed), passWord(r.Passed), fmt.Sprint(n), fmt.Sprint(r.Acknowledged), fmt.Sprint(r.Missing),
			r.Undecided, r.Outage.String(), r.Took.Round(100*time.Millisecond).String())
	}
	if err := t.Render(); err != nil {
		return err
	}
	kinds := make([]string, 0, len(total))
	for k := range total {
		kinds = append(kinds, k)
	}
	slices.Sort(kinds)
	var parts []string
	for _, k := range kinds {
		parts = append(parts, fmt.Sprintf("%s %d", k, total[k]))
	}
	fmt.Fprintf(w, "%d of %d seed(s) passed; %d acknowledged orders checked, %d missing from PostgreSQL\nfaults injected: %s\n",
		passed, len(runs), acked, missing, strings.Join(parts, ", "))
	if line := runs.spread(); line != "" {
		fmt.Fprintln(w, line)
	}
	for _, r := range runs {
		if r.Passed {
			continue
		}
		fmt.Fprintf(w, "seed %d FAILED (%s):\n", r.Seed, r.Report)
		for _, f := range r.Failed {
			fmt.Fprintf(w, "  %s\n", f)
		}
		fmt.Fprintf(w, "  replay: %s\n", r.Replay)
	}
	return nil
}

// spread is the median and the worst of the seeds' undecided shares and longest outages, each
// worst with its seed: what a long run's availability was, in one line.
func (runs chaosRuns) spread() string {
	var shares, outages []chaosRun
	for _, r := range runs {
		if r.share >= 0 {
			shares = append(shares, r)
		}
		outages = append(outages, r)
	}
	if len(shares) == 0 {
		return ""
	}
	slices.SortStableFunc(shares, func(a, b chaosRun) int { return cmp.Compare(a.share, b.share) })
	slices.SortStableFunc(outages, func(a, b chaosRun) int { return cmp.Compare(a.Outage, b.Outage) })
	mid, worst := shares[len(shares)/2], shares[len(shares)-1]
	omid, oworst := outages[len(outages)/2], outages[len(outages)-1]
	return fmt.Sprintf("undecided: median %.1f%%, worst %.1f%% (seed %d); longest outage: median %s, worst %s (seed %d)",
		100*mid.share, 100*worst.share, worst.Seed, omid.Outage, oworst.Outage, oworst.Seed)
}

func passWord(ok bool) string {
	if ok {
		return "PASS"
	}
	return "FAIL"
}
