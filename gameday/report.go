package gameday

import (
	"bytes"
	"encoding/json"
	"fmt"
	"html/template"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/fsctl/fsctl/blast"
	"github.com/fsctl/fsctl/internal/contract/finding"
	"github.com/fsctl/fsctl/internal/platform/durations"
	"github.com/fsctl/fsctl/internal/platform/table"
	"github.com/fsctl/fsctl/loadgen"
	"github.com/fsctl/fsctl/pipeline/steps"
	"github.com/fsctl/fsctl/reconcile"
)

// Report is what a game day did and found.
type Report struct {
	// Kind is what ran: "game day", or "drill" against a team's own checkout.
	Kind     string        `json:"kind"`
	Scenario string        `json:"scenario"`
	Seed     uint64        `json:"seed"`
	Summary  string        `json:"summary"`
	Machine  string        `json:"machine"`
	Started  time.Time     `json:"started"`
	Took     time.Duration `json:"took"` // tookMs in JSON; took (nanoseconds) is deprecated
	Units    int64         `json:"units"`
	WorkDir  string        `json:"workDir"`
	// ReleasedAt is when the buyers were released, from the start of the run: releasedAtMs in
	// JSON; releasedAt (nanoseconds) is deprecated.
	ReleasedAt time.Duration       `json:"releasedAt"`
	Phases     []steps.Step        `json:"phases"`
	Steps      []StepResult        `json:"steps"`
	Preflight  string              `json:"preflight,omitempty"`
	Blast      blast.Summary       `json:"blast"`
	FollowUps  []blast.FollowUpRow `json:"followUps,omitempty"`
	// Availability is how the buyers fared, judged against the scenario's budget.
	Availability Availability           `json:"availability"`
	Reconcile    []reconcile.ItemReport `json:"reconcile,omitempty"`
	// ReconcileText is reconcile's own rendering of the final reconciliation.
	ReconcileText string            `json:"-"`
	Invariants    []finding.Finding `json:"invariants"`
	Timeline      []Event           `json:"timeline"`
	// Soak is what the soak's sampler saw over time, when the run had one (Config.SoakEvery).
	Soak *Soak `json:"soak,omitempty"`
	// Exits are checkout instances that died on their own (not a fault's doing) and were restarted:
	// not an invariant violation, but a resilience finding.
	Exits  []string `json:"unexpectedExits,omitempty"`
	Passed bool     `json:"passed"`
	Error  string   `json:"error,omitempty"`
	// Acknowledged is how many distinct orders buyers were told RESERVED (202), fresh or replayed;
	// Missing is how many of them PostgreSQL does not have after the settle (must be 0).
	Acknowledged int `json:"acknowledged"`
	Missing      int `json:"missing"`
	// Replay is the command that draws a chaos run again (its seed and settings).
	Replay string `json:"replay,omitempty"`

	records []loadgen.Record
}

// StepResult is what one fault step did. Planned, Started (from the start of the run) and Took
// are plannedMs, startedMs and tookMs in JSON; planned, started and took (nanoseconds) are
// deprecated.
type StepResult struct {
	Line  int    `json:"line"`
	Fault string `json:"fault"`
	// Kind is what the fault is tallied as: the nemesis's name for it in a chaos run
	// ("redis-freeze", "payment-outage"), the fault's own name otherwise.
	Kind     string        `json:"kind"`
	Describe string        `json:"describe"`
	Planned  time.Duration `json:"planned"`
	Started  time.Duration `json:"started"`
	Took     time.Duration `json:"took"`
	Note     string        `json:"note,omitempty"`
	Error    string        `json:"error,omitempty"`
}

// Event is one line of the timeline, At from the start of the run (atMs in JSON; at, nanoseconds, is
// deprecated).
type Event struct {
	At     time.Duration `json:"at"`
	Source string        `json:"source"`
	What   string        `json:"what"`
}

// The durations in a report's JSON are milliseconds named <name>Ms (package steps, MarshalMs);
// the nanoseconds under their old names (took, releasedAt, planned, started, at, every, outage,
// outageFrom) are deprecated, written one more release and still read.

// MarshalJSON writes the report with tookMs and releasedAtMs (and the deprecated took and releasedAt).
func (r Report) MarshalJSON() ([]byte, error) {
	type plain Report
	return durations.MarshalMs(plain(r), durations.Field("took", &r.Took), durations.Field("releasedAt", &r.ReleasedAt))
}

// UnmarshalJSON reads a report written with the <name>Ms fields, or before them.
func (r *Report) UnmarshalJSON(b []byte) error {
	type plain Report
	return durations.UnmarshalMs(b, (*plain)(r), durations.Field("took", &r.Took), durations.Field("releasedAt", &r.ReleasedAt))
}

// MarshalJSON writes the step with plannedMs, startedMs and tookMs (and the deprecated planned,
// started and took).
func (s StepResult) MarshalJSON() ([]byte, error) {
	type plain StepResult
	return durations.MarshalMs(plain(s), s.msFields()...)
}

// UnmarshalJSON reads a step written with the <name>Ms fields, or before them.
func (s *StepResult) UnmarshalJSON(b []byte) error {
	type plain StepResult
	return durations.UnmarshalMs(b, (*plain)(s), s.msFields()...)
}

func (s *StepResult) msFields() []durations.MsField {
	return []durations.MsField{durations.Field("planned", &s.Planned), durations.Field("started", &s.Started), durations.Field("took", &s.Took)}
}

// MarshalJSON writes the event with atMs (and the deprecated at).
func (e Event) MarshalJSON() ([]byte, error) {
	type plain Event
	return durations.MarshalMs(plain(e), durations.Field("at", &e.At))
}

// UnmarshalJSON reads an event written with atMs, or before it.
func (e *Event) UnmarshalJSON(b []byte) error {
	type plain Event
	return durations.UnmarshalMs(b, (*plain)(e), durations.Field("at", &e.At))
}

// Verdict is how a run failed, worst first: an invariant broken (data at risk), the run unable to
// go on (a phase or a step that could not run), or only a figure missed (the availability budget,
// the soak, an instance that exited on its own); VerdictPassed when it passed.
func (r *Report) Verdict() Verdict {
	switch {
	case r.Passed:
		return VerdictPassed
	case slices.ContainsFunc(r.Invariants, func(c finding.Finding) bool { return !c.Passed() && c.Check != availabilityCheck }):
		return VerdictBroken
	case r.Error != "" || slices.ContainsFunc(r.Phases, func(p steps.Step) bool { return p.Error != "" }) ||
		slices.ContainsFunc(r.Steps, func(s StepResult) bool { return s.Error != "" }):
		return VerdictFailed
	}
	return VerdictMissed
}

// Verdict is a run's outcome; see Report.Verdict.
type Verdict int

// Verdicts, from best to worst.
const (
	VerdictPassed Verdict = iota
	VerdictMissed
	VerdictFailed
	VerdictBroken
)

// Failures lists what did not hold, one line each: the run's error, a phase or a step that
// failed, an invariant broken.
func (r *Report) Failures() []string {
	var out []string
	// The run's error is usually its first failed phase's, listed with the phase's name below.
	if r.Error != "" && !slices.ContainsFunc(r.Phases, func(p steps.Step) bool { return p.Error == r.Error }) {
		out = append(out, r.Error)
	}
	for _, p := range r.Phases {
		if p.Error != "" {
			out = append(out, p.Name+": "+p.Error)
		}
	}
	for _, s := range r.Steps {
		if s.Error != "" {
			out = append(out, fmt.Sprintf("step %d %s: %s", s.Line, s.Fault, s.Error))
		}
	}
	for _, c := range r.Invariants {
		if !c.Passed() {
			out = append(out, c.Check+": "+c.Detail)
		}
	}
	if r.Soak != nil {
		for _, v := range r.Soak.Verdicts {
			if !v.OK {
				out = append(out, "soak: "+v.Figure+" grew: "+v.Detail)
			}
		}
	}
	return out
}

func (r *Report) allOK() bool { return len(r.Failures()) == 0 && len(r.Invariants) > 0 }

// Render writes the report for a terminal.
func (r *Report) Render(w io.Writer) error {
	fmt.Fprintf(w, "\n%s %s (seed %d) on %s\n%s\n", r.Kind, r.Scenario, r.Seed, r.Machine, r.Summary)
	// The results wrap on a narrow terminal (package table).
	t := table.New(w, "phase", "took", "result").Wrap("result", 0)
	for _, p := range r.Phases {
		res := p.Detail
		if p.Error != "" {
			res = "FAILED: " + p.Error
		}
		_ = t.Append(p.Name, fmtDur(p.Took), res)
	}
	if err := t.Render(); err != nil {
		return err
	}
	if len(r.Steps) > 0 {
		t = table.New(w, "line", "at", "fault", "took", "result").Wrap("result", 0).Wrap("fault", 0).Drop("took")
		for _, s := range r.Steps {
			res := s.Note
			if s.Error != "" {
				res = "FAILED: " + s.Error
			}
			_ = t.Append(fmt.Sprint(s.Line), "+"+fmtDur(s.Planned), s.Describe, fmtDur(s.Took), res)
		}
		if err := t.Render(); err != nil {
			return err
		}
	}
	if r.Blast.Buyers > 0 {
		if err := r.Blast.Render(w); err != nil {
			return err
		}
		if len(r.FollowUps) > 0 {
			t = table.New(w, "after the purchase", "answer", "buyers")
			for _, f := range r.FollowUps {
				_ = t.Append(string(f.Action), f.Answer, fmt.Sprint(f.Count))
			}
			if err := t.Render(); err != nil {
				return err
			}
		}
	}
	if r.ReconcileText != "" && !r.reconcileOK() {
		fmt.Fprint(w, r.ReconcileText)
	}
	if err := finding.Invariants(w, r.Invariants); err != nil {
		return err
	}
	if r.Soak != nil {
		if err := r.Soak.Render(w); err != nil {
			return err
		}
	}
	for _, e := range r.Exits {
		fmt.Fprintf(w, "unexpected exit (restarted): %s\n", e)
	}
	if r.Error != "" {
		fmt.Fprintf(w, "error: %s\n", r.Error)
	}
	if r.Replay != "" && !r.Passed {
		fmt.Fprintf(w, "seed %d failed; the faults above are its timeline. Replay it: %s\n", r.Seed, r.Replay)
		fmt.Fprintf(w, "shrink it by hand: keep some of its steps with --chaos-steps 1,3 and replay until it passes\n")
	}
	fmt.Fprintf(w, "%s %s: %s in %s\n", r.Kind, r.Scenario, passWord(r.Passed), fmtDur(r.Took))
	return nil
}

// WriteJSON writes the report as one JSON document.
func (r *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(r)
}

// WriteFiles writes the report into dir three ways: report.md, report.html and report.json.
func (r *Report) WriteFiles(dir string) error {
	for _, file := range []struct {
		name  string
		write func(io.Writer) error
	}{{"report.md", r.WriteMarkdown}, {"report.html", r.WriteHTML}, {"report.json", r.WriteJSON}} {
		if err := writeFile(filepath.Join(dir, file.name), file.write); err != nil {
			return err
		}
	}
	return nil
}

// writeFile creates the file at path and has write fill it.
func writeFile(path string, write func(io.Writer) error) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := write(f); err != nil {
		f.Close()
		return fmt.Errorf("%s: %w", filepath.Base(path), err)
	}
	return f.Close()
}

// Title is the report's kind for a heading: "Game day" or "Drill".
func (r *Report) Title() string {
	if r.Kind == "drill" {
		return "Drill"
	}
	return "Game day"
}

// WriteMarkdown writes the report as a Markdown page (the terminal tables in code blocks, so they
// read the same everywhere).
func (r *Report) WriteMarkdown(w io.Writer) error {
	var term bytes.Buffer
	if err := r.Render(&term); err != nil {
		return err
	}
	fmt.Fprintf(w, "# %s %s: %s\n\n", r.Title(), r.Scenario, passWord(r.Passed))
	fmt.Fprintf(w, "- started %s, took %s\n- machine: %s\n- %s\n\n", r.Started.Format(time.RFC3339), fmtDur(r.Took), r.Machine, r.Summary)
	fmt.Fprintf(w, "## Phases\n\n| phase | took | result |\n|---|---:|---|\n")
	for _, p := range r.Phases {
		res := p.Detail
		if p.Error != "" {
			res = "**FAILED**: " + p.Error
		}
		fmt.Fprintf(w, "| %s | %s | %s |\n", p.Name, fmtDur(p.Took), mdCell(res))
	}
	fmt.Fprintf(w, "\n## Faults\n\n| line | planned | started | fault | took | result |\n|---:|---:|---:|---|---:|---|\n")
	for _, s := range r.Steps {
		res := s.Note
		if s.Error != "" {
			res = "**FAILED**: " + s.Error
		}
		fmt.Fprintf(w, "| %d | +%s | %s | %s | %s | %s |\n", s.Line, fmtDur(s.Planned), fmtDur(s.Started), mdCell(s.Describe), fmtDur(s.Took), mdCell(res))
	}
	fmt.Fprintf(w, "\n## Invariants after recovery\n\n| invariant | | detail |\n|---|---|---|\n")
	for _, c := range r.Invariants {
		fmt.Fprintf(w, "| %s | %s | %s |\n", c.Check, okWord(c.Passed()), mdCell(c.Detail))
	}
	if len(r.Exits) > 0 {
		fmt.Fprintf(w, "\n## Instances that exited on their own (restarted by the game day's supervisor)\n\n")
		for _, e := range r.Exits {
			fmt.Fprintf(w, "- %s\n", mdCell(e))
		}
	}
	fmt.Fprintf(w, "\n## Timeline\n\n| at | source | event |\n|---:|---|---|\n")
	for _, e := range r.Timeline {
		fmt.Fprintf(w, "| %.1fs | %s | %s |\n", e.At.Seconds(), e.Source, mdCell(e.What))
	}
	fmt.Fprintf(w, "\n## Terminal output\n\n```\n%s```\n", term.String())
	if r.ReconcileText != "" {
		fmt.Fprintf(w, "\n## Reconcile\n\n```\n%s```\n", r.ReconcileText)
	}
	if r.Preflight != "" {
		fmt.Fprintf(w, "\n## Preflight\n\n```\n%s```\n", r.Preflight)
	}
	return nil
}

var htmlPage = template.Must(template.New("gameday").Parse(`<!doctype html>
<html><head><meta charset="utf-8"><title>{{.R.Title}} {{.R.Scenario}}: {{.Verdict}}</title>
<style>body{font-family:system-ui,sans-serif;margin:2em;max-width:1200px}table{border-collapse:collapse;margin:1em 0}
td,th{border:1px solid #ccc;padding:4px 8px;text-align:left;vertical-align:top}.ok{color:#070}.fail{color:#b00;font-weight:bold}
pre{background:#f6f6f6;padding:1em;overflow-x:auto}iframe{width:100%;height:1400px;border:1px solid #ccc}</style></head><body>
<h1>{{.R.Title}} {{.R.Scenario}}: <span class="{{if .R.Passed}}ok{{else}}fail{{end}}">{{.Verdict}}</span></h1>
<p>Started {{.R.Started.Format "2006-01-02T15:04:05Z07:00"}}, took {{.Took}}.<br>Machine: {{.R.Machine}}<br>{{.R.Summary}}</p>
<h2>Phases</h2><table><tr><th>phase</th><th>took</th><th>result</th></tr>
{{range .Phases}}<tr><td>{{.Name}}</td><td>{{.Took}}</td><td class="{{.Class}}">{{.Result}}</td></tr>{{end}}</table>
<h2>Faults</h2><table><tr><th>line</th><th>planned</th><th>fault</th><th>took</th><th>result</th></tr>
{{range .Steps}}<tr><td>{{.Line}}</td><td>+{{.Planned}}</td><td>{{.Describe}}</td><td>{{.Took}}</td><td class="{{.Class}}">{{.Result}}</td></tr>{{end}}</table>
<h2>Invariants after recovery</h2><table>
{{range .R.Invariants}}<tr><td>{{.Check}}</td><td class="{{if .Passed}}ok{{else}}fail{{end}}">{{if .Passed}}OK{{else}}FAIL{{end}}</td><td>{{.Detail}}</td></tr>{{end}}</table>
<h2>Timeline</h2><table><tr><th>at</th><th>source</th><th>event</th></tr>
{{range .R.Timeline}}<tr><td>{{printf "%.1fs" .At.Seconds}}</td><td>{{.Source}}</td><td>{{.What}}</td></tr>{{end}}</table>
<h2>Terminal output</h2><pre>{{.Terminal}}</pre>
{{if .Blast}}<h2>The burst</h2><iframe srcdoc="{{.Blast}}"></iframe>{{end}}
</body></html>
`))

type htmlRow struct {
	Name, Describe, Result, Class string
	Line                          int
	Took, Planned                 string
}

// WriteHTML writes a self-contained page: the report, the timeline and blast's plots (latency,
// outcomes and stock over time) embedded.
func (r *Report) WriteHTML(w io.Writer) error {
	var term, plots bytes.Buffer
	if err := r.Render(&term); err != nil {
		return err
	}
	if len(r.records) > 0 {
		if err := blast.WriteHTML(&plots, r.Blast, r.records); err != nil {
			return err
		}
	}
	row := func(errText, note string) (string, string) {
		if errText != "" {
			return "FAILED: " + errText, "fail"
		}
		return note, "ok"
	}
	var phases, steps []htmlRow
	for _, p := range r.Phases {
		res, cl := row(p.Error, p.Detail)
		phases = append(phases, htmlRow{Name: p.Name, Took: fmtDur(p.Took), Result: res, Class: cl})
	}
	for _, s := range r.Steps {
		res, cl := row(s.Error, s.Note)
		steps = append(steps, htmlRow{Line: s.Line, Planned: fmtDur(s.Planned), Describe: s.Describe, Took: fmtDur(s.Took), Result: res, Class: cl})
	}
	return htmlPage.Execute(w, map[string]any{
		"R": r, "Verdict": passWord(r.Passed), "Took": fmtDur(r.Took), "Phases": phases, "Steps": steps,
		"Terminal": term.String(), "Blast": plots.String(),
	})
}

func fmtDur(d time.Duration) string {
	switch {
	case d >= time.Second:
		return d.Round(100 * time.Millisecond).String()
	default:
		return d.Round(time.Millisecond).String()
	}
}

func okWord(ok bool) string {
	if ok {
		return "OK"
	}
	return "FAIL"
}

func mdCell(s string) string {
	return strings.NewReplacer("|", `\|`, "\n", " ").Replace(s)
}

func (r *Report) reconcileOK() bool {
	for _, it := range r.Reconcile {
		if len(it.Problems) > 0 {
			return false
		}
	}
	return true
}
