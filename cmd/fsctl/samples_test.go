package main

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// A sample is what a document or a command's --help shows a command printing: a real run's
// output, trimmed. It must still be what the command prints, its figures aside: every line it
// shows appears, in order, in what the command prints when the test runs it (TestEveryExampleRuns
// runs every --help Example; a line "..." or "…" stands for lines left out). Figures are masked:
// a number, a duration, a time, an id all read "#", runs of spaces and of a table's rules read as
// one, so a column renamed, added or dropped, a line reworded or gone, or an outcome no longer
// printed is a finding, and 4504 req/s against 3870 req/s is not.

var (
	// figure is a number as fsctl prints it (12, 1,234, 0.002, 7.3%, -3), with a unit glued to it
	// left alone (12.5s -> #s).
	figure = regexp.MustCompile(`[-+]?\d[\d,]*(\.\d+)?`)
	// hexID is an order id, a key or a hash.
	hexID = regexp.MustCompile(`\b[0-9a-f]{8,}(-[0-9a-f]{4,})*\b`)
	// duration is a duration as Go prints it (285ms, 2.106s, 1m7.5s, 162µs): its unit goes with the
	// figure, since the same wait prints as 449ms on one run and 2.106s on a slower one.
	duration = regexp.MustCompile(`\d[\d.]*(ns|µs|us|ms|s|m|h)(\d[\d.]*(ns|µs|us|ms|s|m))*\b`)
	// rule is a run of a table's horizontal rule.
	rule = regexp.MustCompile(`[─━-]{2,}`)
	// spaces is a run of blanks (a table's padding).
	spaces = regexp.MustCompile(`\s+`)
)

// maskSample is line with its figures masked (see above).
func maskSample(line string) string {
	line = hexID.ReplaceAllString(line, "#")
	line = duration.ReplaceAllString(line, "#d")
	line = figure.ReplaceAllString(line, "#")
	line = rule.ReplaceAllString(line, "─")
	return strings.TrimSpace(spaces.ReplaceAllString(line, " "))
}

// sampleMissing is the first line of shown that out does not print, in order and figures aside;
// "" when every one is there.
func sampleMissing(shown []string, out string) string {
	got := strings.Split(out, "\n")
	next := 0
	for _, s := range shown {
		want := maskSample(s)
		if want == "..." || want == "…" || want == "" {
			continue
		}
		found := false
		for next < len(got) {
			g := maskSample(got[next])
			next++
			if g == want {
				found = true
				break
			}
		}
		if !found {
			return s
		}
	}
	return ""
}

func TestSampleMatching(t *testing.T) {
	out := `engine: raw (auto); request timeout 12.5s (auto: 10s + 1s per 2000 clicks)
┌──────────┬──────────┐
│ OUTCOME  │ REQUESTS │
├──────────┼──────────┤
│ RESERVED │ 100      │
│ SOLD_OUT │ 4900     │
└──────────┴──────────┘
buyers 5000, requests 5000, sold 100; 4504 req/s over 1110.2ms from the release
order 3f9a2c41-77aa placed`
	for _, c := range []struct {
		shown   []string
		missing string
	}{
		{[]string{"engine: raw (auto); request timeout 9.5s (auto: 10s + 1s per 4000 clicks)", "│ RESERVED │ 7 │"}, ""},
		{[]string{"┌───┬───┐", "│ OUTCOME │ REQUESTS │", "...", "buyers 20, requests 20, sold 3; 45 req/s over 2.2ms from the release"}, ""},
		{[]string{"order deadbeef00-1234 placed"}, ""},
		{[]string{"buyers 5000, requests 5000, sold 100; 4504 req/s over 2.3s from the release"}, ""}, // 1110.2ms on this run, seconds on a slower one
		{[]string{"│ RESERVED │ 100 │", "engine: raw (auto); request timeout 12.5s (auto: 10s + 1s per 2000 clicks)"}, "engine: raw (auto); request timeout 12.5s (auto: 10s + 1s per 2000 clicks)"}, // out of order
		{[]string{"│ OUTCOME │ REQUESTS │ P 50 MS │"}, "│ OUTCOME │ REQUESTS │ P 50 MS │"},                                                                                                           // a column the command no longer prints
		{[]string{"│ TIMEOUT │ 3 │"}, "│ TIMEOUT │ 3 │"},
		{[]string{"buyers 5000, requests 5000; 4504 req/s"}, "buyers 5000, requests 5000; 4504 req/s"},
	} {
		if got := sampleMissing(c.shown, out); got != c.missing {
			t.Errorf("sampleMissing(%q) = %q, want %q", c.shown, got, c.missing)
		}
	}
}

// sampleMarker is the line before a document's fenced block that is a sample: its first line is
// the command ("$ fsctl ...", "\" continuing it), the others what it prints. TestEveryExampleRuns
// runs it in the examples' sandbox and holds its output to them.
const sampleMarker = "<!-- sample -->"

// docSamples is every sample the repository's documents mark, as examples owned by the command
// each one runs.
func docSamples(t *testing.T, root *cobra.Command) []example {
	t.Helper()
	docs := markdownFiles(t, "../..", false) // docs/cli is generated from --help: its Examples are run as such
	var out []example
	for _, name := range slices.Sorted(maps.Keys(docs)) {
		samples, errs := samplesOf(t, root, name, docs[name])
		for _, err := range errs {
			t.Error(err)
		}
		out = append(out, samples...)
	}
	return out
}

// samplesOf is the samples one document (named where) marks, and what is wrong with a mark.
func samplesOf(t *testing.T, root *cobra.Command, where, doc string) ([]example, []error) {
	t.Helper()
	lines := strings.Split(doc, "\n")
	var out []example
	var errs []error
	for i := 0; i+2 < len(lines); i++ {
		if strings.TrimSpace(lines[i]) != sampleMarker {
			continue
		}
		if !fence.MatchString(lines[i+1]) {
			errs = append(errs, fmt.Errorf("%s:%d: %s is not followed by a fenced block", where, i+1, sampleMarker))
			continue
		}
		var cmd, shows []string
		start, j := i+1, i+2
		for ; j < len(lines) && !fence.MatchString(lines[j]); j++ {
			l := lines[j]
			switch {
			case len(shows) == 0 && (strings.HasPrefix(l, "$ ") || len(cmd) > 0 && strings.HasSuffix(cmd[len(cmd)-1], "\\")):
				cmd = append(cmd, strings.TrimPrefix(l, "$ "))
			default:
				shows = append(shows, l)
			}
		}
		i = j
		if len(cmd) == 0 || !strings.HasPrefix(cmd[0], "fsctl ") {
			errs = append(errs, fmt.Errorf("%s: the sample at line %d does not start with \"$ fsctl ...\"", where, start))
			continue
		}
		ex := examplesOf(t, &cobra.Command{Use: "sample", Example: "  " + strings.Join(cmd, "\n  ")})
		if len(ex) != 1 {
			errs = append(errs, fmt.Errorf("%s: the sample at line %d is not one fsctl command", where, start))
			continue
		}
		owner, _, err := root.Find(strings.Fields(cmd[0])[1:])
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: the sample at line %d: %v", where, start, err))
			continue
		}
		e := ex[0]
		e.owner, e.line, e.shows, e.doc = owner, where+": "+strings.Join(cmd, " "), shows, true
		out = append(out, e)
	}
	return out, errs
}

func TestSamplesOfADocument(t *testing.T) {
	doc := "intro\n\n" + sampleMarker + "\n```console\n$ fsctl reconcile --sale black-friday \\\n    --item console\nitem console OK\n...\n```\n\n" +
		sampleMarker + "\n```\ncurl -s x\n```\n"
	got, errs := samplesOf(t, newRootCmd(), "doc.md", doc)
	if len(got) != 1 {
		t.Fatalf("%d samples, want 1", len(got))
	}
	s := got[0]
	if s.owner.CommandPath() != "fsctl reconcile" || !strings.Contains(s.line, "--item console") ||
		strings.Join(s.shows, "|") != "item console OK|..." {
		t.Errorf("sample %s owned by %s shows %q", s.line, s.owner.CommandPath(), s.shows)
	}
	if len(errs) != 1 || !strings.Contains(errs[0].Error(), "doc.md") {
		t.Errorf("a marked block that runs no fsctl command: %v, want one error naming doc.md", errs)
	}
}
