// Package finding is the one vocabulary of what a check found: a line with a status, what it
// saw, what an operator does about it and, where a safe repair exists, the repair itself. The
// pre-sale checklist (preflight) and the profile check write findings; they are counted, judged,
// repaired and rendered (one table, one JSON shape) here, the same way for every command.
package finding

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/fsctl/fsctl/internal/platform/table"
)

// Status is the verdict of one check.
type Status string

// The verdicts, from best to worst. A warning does not fail a run unless it is strict.
const (
	Pass Status = "pass"
	Skip Status = "skip"
	Warn Status = "warn"
	Fail Status = "fail"
)

// Rank orders the statuses from the best to the worst: pass, skip, warn, fail.
func (s Status) Rank() int {
	switch s {
	case Skip:
		return 1
	case Warn:
		return 2
	case Fail:
		return 3
	}
	return 0
}

// Finding is one line of a check.
type Finding struct {
	// Group gathers the lines of one part of the target (redis, kafka, profile ...); empty
	// where a check has one part.
	Group  string `json:"group,omitempty"`
	Check  string `json:"check"`
	Status Status `json:"status"`
	Detail string `json:"detail"`
	// Problems lists each thing that breaks the check when there are several (an invariant's
	// violations, at most maxProblems of them and a count of the rest).
	Problems []string `json:"problems,omitempty"`
	// Fix says what an operator does about a warning or failure.
	Fix string `json:"fix,omitempty"`
	// Repair describes the safe repair Apply makes (what --fix does); Apply is nil without one.
	Repair string                          `json:"autoFix,omitempty"`
	Apply  func(ctx context.Context) error `json:"-"`
}

// Applied is one repair that was made.
type Applied struct {
	Check  string `json:"check"`
	Action string `json:"action"`
	Error  string `json:"error,omitempty"`
}

// maxProblems keeps a verdict readable when thousands of buyers break the same rule.
const maxProblems = 10

// Verdict is the finding of a rule that holds when nothing breaks it: it passes without
// problems, and fails listing them (the first maxProblems, then how many more).
func Verdict(check string, problems []string) Finding {
	f := Finding{Check: check, Status: Pass}
	if n := len(problems); n > 0 {
		f.Status = Fail
		if n > maxProblems {
			problems = append(problems[:maxProblems:maxProblems], fmt.Sprintf("... and %d more", n-maxProblems))
		}
		f.Problems = problems
	}
	return f
}

// Passed reports whether the finding passed.
func (f Finding) Passed() bool { return f.Status == Pass }

// Count returns how many findings have the status.
func Count(fs []Finding, s Status) int {
	n := 0
	for _, f := range fs {
		if f.Status == s {
			n++
		}
	}
	return n
}

// OK reports whether the findings pass: no failure, and no warning when strict. This is the
// exit-status rule of every command that reports findings: OK exits 0, anything else 1.
func OK(fs []Finding, strict bool) bool {
	return Count(fs, Fail) == 0 && (!strict || Count(fs, Warn) == 0)
}

// ApplyAll makes the repair of every finding that warned or failed, once, each within timeout,
// and says what it did.
func ApplyAll(ctx context.Context, fs []Finding, timeout time.Duration) []Applied {
	var out []Applied
	for _, f := range fs {
		if f.Apply == nil || (f.Status != Fail && f.Status != Warn) {
			continue
		}
		a := Applied{Check: f.Check, Action: f.Repair}
		rctx, cancel := context.WithTimeout(ctx, timeout)
		if err := f.Apply(rctx); err != nil {
			a.Error = err.Error()
		}
		cancel()
		out = append(out, a)
	}
	return out
}

// HowToFix is what the table's last column says: the fix, and the repair --fix would make.
func (f Finding) HowToFix() string {
	if f.Apply != nil && f.Status != Pass {
		return strings.TrimSpace(f.Fix + " [--fix: " + f.Repair + "]")
	}
	return f.Fix
}

// Table renders the findings as one table (a group column when any finding has a group), long
// details and fixes wrapped inside their columns; on a narrow terminal they wrap narrower, and
// the group column goes last of all (package table).
func Table(w io.Writer, fs []Finding) error {
	grouped := false
	for _, f := range fs {
		grouped = grouped || f.Group != ""
	}
	header := []string{"check", "status", "detail", "how to fix"}
	if grouped {
		header = append([]string{"group"}, header...)
	}
	t := table.New(w, header...).Wrap("detail", detailWidth).Wrap("how to fix", fixWidth)
	if grouped {
		t.Drop("group")
	}
	for _, f := range fs {
		row := []any{f.Check, strings.ToUpper(string(f.Status)), f.Detail, f.HowToFix()}
		if grouped {
			row = append([]any{f.Group}, row...)
		}
		if err := t.Append(row...); err != nil {
			return err
		}
	}
	return t.Render()
}

// Invariants writes findings about invariants one a line, "invariant OK      name: detail" or
// "invariant BROKEN  name: detail", each problem indented below its line.
func Invariants(w io.Writer, fs []Finding) error {
	for _, f := range fs {
		word := "OK"
		if !f.Passed() {
			word = "BROKEN"
		}
		line := f.Check
		if f.Detail != "" {
			line += ": " + f.Detail
		}
		if _, err := fmt.Fprintf(w, "invariant %-7s %s\n", word, line); err != nil {
			return err
		}
		for _, p := range f.Problems {
			if _, err := fmt.Fprintf(w, "    %s\n", p); err != nil {
				return err
			}
		}
	}
	return nil
}

// The widths the detail and fix columns wrap at, even in a file: wider, a line is hard to follow.
const detailWidth, fixWidth = 58, 42
