package gameday

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/fsctl/fsctl/internal/platform/durations"
	"github.com/fsctl/fsctl/internal/platform/table"
)

// SeedRun is one seed of a run of several (RunSeeds).
type SeedRun struct {
	Seed   uint64 `json:"seed"`
	Passed bool   `json:"passed"`
	// Faults counts the faults the nemesis applied, by kind.
	Faults       map[string]int `json:"faults"`
	Acknowledged int            `json:"acknowledged"`
	Missing      int            `json:"missing"`
	Undecided    string         `json:"undecided"`
	Outage       time.Duration  `json:"outage"` // outageMs in JSON; outage (nanoseconds) is deprecated
	Took         time.Duration  `json:"took"`   // tookMs in JSON; took (nanoseconds) is deprecated
	Replay       string         `json:"replay,omitempty"`
	Failed       []string       `json:"failed,omitempty"`
	Report       string         `json:"report"`
	verdict      Verdict
	share        float64 // the undecided share; -1 with no buyers
}

// MarshalJSON writes the run with outageMs and tookMs (and the deprecated outage and took).
func (r SeedRun) MarshalJSON() ([]byte, error) {
	type plain SeedRun
	return durations.MarshalMs(plain(r), durations.Field("outage", &r.Outage), durations.Field("took", &r.Took))
}

// UnmarshalJSON reads a run written with the <name>Ms fields, or before them.
func (r *SeedRun) UnmarshalJSON(b []byte) error {
	type plain SeedRun
	return durations.UnmarshalMs(b, (*plain)(r), durations.Field("outage", &r.Outage), durations.Field("took", &r.Took))
}

// summarizeSeed is what the seeds' report keeps of one seed's report, written at report.
func summarizeSeed(rep *Report, report string) SeedRun {
	r := SeedRun{Seed: rep.Seed, Passed: rep.Passed, verdict: rep.Verdict(), Faults: map[string]int{}, Acknowledged: rep.Acknowledged, Missing: rep.Missing,
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

// SeedsReport is the report of several seeds, in the order they ran.
type SeedsReport []SeedRun

// WriteJSON writes the runs as one JSON array.
func (runs SeedsReport) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode([]SeedRun(runs))
}

// Render writes a row per seed, the totals, and each failing seed with its replay command.
func (runs SeedsReport) Render(w io.Writer) error {
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
	fmt.Fprintf(w, "%d of %d seed(s) passed; %d acknowledged orders checked, %d missing from PostgreSQL\nfaults injected: %s\n",
		passed, len(runs), acked, missing, faultsByKind(total))
	if line := runs.spread(); line != "" {
		fmt.Fprintln(w, line)
	}
	runs.renderFailed(w)
	return nil
}

// faultsByKind is "kind count" for each kind, in the kinds' order.
func faultsByKind(total map[string]int) string {
	kinds := slices.Sorted(maps.Keys(total))
	parts := make([]string, 0, len(kinds))
	for _, k := range kinds {
		parts = append(parts, fmt.Sprintf("%s %d", k, total[k]))
	}
	return strings.Join(parts, ", ")
}

// renderFailed writes each failing seed: where its report is, what failed, how to replay it.
func (runs SeedsReport) renderFailed(w io.Writer) {
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
}

// spread is the median and the worst of the seeds' undecided shares and longest outages, each
// worst with its seed: what a long run's availability was, in one line.
func (runs SeedsReport) spread() string {
	var shares, outages []SeedRun
	for _, r := range runs {
		if r.share >= 0 {
			shares = append(shares, r)
		}
		outages = append(outages, r)
	}
	if len(shares) == 0 {
		return ""
	}
	slices.SortStableFunc(shares, func(a, b SeedRun) int { return cmp.Compare(a.share, b.share) })
	slices.SortStableFunc(outages, func(a, b SeedRun) int { return cmp.Compare(a.Outage, b.Outage) })
	mid, worst := shares[len(shares)/2], shares[len(shares)-1]
	omid, oworst := outages[len(outages)/2], outages[len(outages)-1]
	return fmt.Sprintf("undecided: median %.1f%%, worst %.1f%% (seed %d); longest outage: median %s, worst %s (seed %d)",
		100*mid.share, 100*worst.share, worst.Seed, omid.Outage, oworst.Outage, oworst.Seed)
}
