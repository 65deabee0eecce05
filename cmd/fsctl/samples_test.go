package main

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"testing"
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
	duration = regexp.MustCompile(`[-+]?\d[\d.]*(ns|µs|us|ms|s|m|h)(\d[\d.]*(ns|µs|us|ms|s|m))*\b`)
	// rule is a run of a table's horizontal rule.
	rule = regexp.MustCompile(`[─━-]{2,}`)
	// groupState is a Kafka consumer group's state, which moves while members join and leave.
	groupState = regexp.MustCompile(`\b(Stable|PreparingRebalance|CompletingRebalance|Empty)\b`)
	// spaces is a run of blanks (a table's padding).
	spaces = regexp.MustCompile(`\s+`)
)

// maskSample is line with its figures masked (see above).
func maskSample(line string) string {
	line = hexID.ReplaceAllString(line, "#")
	line = duration.ReplaceAllString(line, "#d")
	line = figure.ReplaceAllString(line, "#")
	line = rule.ReplaceAllString(line, "─")
	line = groupState.ReplaceAllString(line, "#state")
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
	out := `clock skew -0.0ms against the server
kafka: group fsctl-order-consumer PreparingRebalance, 1 member(s)
engine: raw (auto); request timeout 12.5s (auto: 10s + 1s per 2000 clicks)
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
		{[]string{"clock skew +0.3ms against the server"}, ""}, // a sign is the figure's
		{[]string{"kafka: group fsctl-order-consumer Stable, 1 member(s)"}, ""},
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

// A document's sample is a fenced block that a marker line precedes: sampleMarker for one the
// tests replay, notReplayed for one they cannot (it needs hosts, a shop or minutes the sandbox does
// not have), which says why. The block is a shell session: each "$ " line (with its "\"
// continuations) is a command, the lines below it up to the next "$ " what it printed.
// TestEveryExampleRuns replays a marked block as one shell script in its sandbox and holds each
// command's output to what the block shows; TestEveryOutputIsASample makes every block that shows
// a command's output carry one marker or the other.
const (
	sampleMarker = "<!-- sample -->"
	notReplayed  = "<!-- not replayed: "
)

// docSample is one marked block of a document.
type docSample struct {
	where string // file:line of its fence
	steps []sampleStep
}

// sampleStep is one command of a sample and the lines it shows the command printing.
type sampleStep struct {
	cmd   string // the command as typed, continuations joined by newlines
	shows []string
}

// name names the sample's subtest.
func (s docSample) name() string {
	return strings.NewReplacer("/", "_", " ", "_").Replace(s.where)
}

// docSamples is every block the repository's documents mark as a sample to replay.
func docSamples(t *testing.T) []docSample {
	t.Helper()
	docs := markdownFiles(t, "../..", false) // docs/cli is generated from --help: its Examples are run as such
	var out []docSample
	for _, name := range slices.Sorted(maps.Keys(docs)) {
		samples, errs := samplesOf(name, docs[name])
		for _, err := range errs {
			t.Error(err)
		}
		out = append(out, samples...)
	}
	return out
}

// samplesOf is the samples one document (named where) marks to replay, and what is wrong with a
// mark: a marker not followed by a fenced block, or a block that runs no fsctl command.
func samplesOf(where, doc string) ([]docSample, []error) {
	lines := strings.Split(doc, "\n")
	var out []docSample
	var errs []error
	for i := 0; i+1 < len(lines); i++ {
		if strings.TrimSpace(lines[i]) != sampleMarker {
			continue
		}
		if !fence.MatchString(lines[i+1]) {
			errs = append(errs, fmt.Errorf("%s:%d: %s is not followed by a fenced block", where, i+1, sampleMarker))
			continue
		}
		s := docSample{where: fmt.Sprintf("%s:%d", where, i+2)}
		j, before := i+2, false // before: text before the first command
		for ; j < len(lines) && !fence.MatchString(lines[j]); j++ {
			l := lines[j]
			last := len(s.steps) - 1
			switch {
			case last < 0 && !strings.HasPrefix(l, "$ "):
				before = before || strings.TrimSpace(l) != ""
			case strings.HasPrefix(l, "$ "):
				s.steps = append(s.steps, sampleStep{cmd: strings.TrimPrefix(l, "$ ")})
			case last >= 0 && len(s.steps[last].shows) == 0 && strings.HasSuffix(s.steps[last].cmd, "\\"):
				s.steps[last].cmd += "\n" + l
			case last >= 0:
				s.steps[last].shows = append(s.steps[last].shows, l)
			}
		}
		i = j
		if before || !slices.ContainsFunc(s.steps, func(st sampleStep) bool { return strings.HasPrefix(st.cmd, "fsctl ") }) {
			errs = append(errs, fmt.Errorf("%s: the sample does not start with a \"$ \" command, or runs no fsctl command", s.where))
			continue
		}
		out = append(out, s)
	}
	return out, errs
}

func TestSamplesOfADocument(t *testing.T) {
	doc := "intro\n\n" + sampleMarker + "\n```console\n$ redis-cli -u \"$FSCTL_REDIS_URL\" DEL k\n$ fsctl reconcile --sale black-friday \\\n    --item console\nitem console OK\n...\n" +
		"$ fsctl reconcile --sale black-friday --fix\nOK\n```\n\n" + sampleMarker + "\n```\n$ curl -s x\n```\n\n" + sampleMarker + "\nno fence\n"
	got, errs := samplesOf("doc.md", doc)
	if len(got) != 1 {
		t.Fatalf("%d samples, want 1", len(got))
	}
	s := got[0]
	if s.where != "doc.md:4" || len(s.steps) != 3 {
		t.Fatalf("sample at %s has %d steps, want doc.md:4 and 3", s.where, len(s.steps))
	}
	if st := s.steps[1]; st.cmd != "fsctl reconcile --sale black-friday \\\n    --item console" || strings.Join(st.shows, "|") != "item console OK|..." {
		t.Errorf("step %q shows %q", st.cmd, st.shows)
	}
	if st := s.steps[2]; strings.Join(st.shows, "|") != "OK" {
		t.Errorf("step %q shows %q", st.cmd, st.shows)
	}
	if len(errs) != 2 || !strings.Contains(errs[0].Error(), "runs no fsctl command") || !strings.Contains(errs[1].Error(), "not followed by a fenced block") {
		t.Errorf("a block that runs no fsctl command and a marker without a block: %v, want those two errors", errs)
	}
}

// TestEveryOutputIsASample: a block of a document that shows what a command printed (a "$ " line,
// then a line that is not one) is marked a sample to replay, or says why it is not replayed.
func TestEveryOutputIsASample(t *testing.T) {
	docs := markdownFiles(t, "../..", false)
	replayed, recorded := 0, 0
	for _, name := range slices.Sorted(maps.Keys(docs)) {
		lines := strings.Split(docs[name], "\n")
		for i := 0; i < len(lines); i++ {
			if !fence.MatchString(lines[i]) {
				continue
			}
			j := i + 1
			for j < len(lines) && !fence.MatchString(lines[j]) {
				j++
			}
			if showsOutput(lines[i+1 : min(j, len(lines))]) {
				switch mark := markerBefore(lines, i); {
				case mark == sampleMarker:
					replayed++
				case strings.HasPrefix(mark, notReplayed) && len(mark) > len(notReplayed)+10:
					recorded++
				default:
					t.Errorf("%s:%d: a block that shows a command's output, not marked %s (replayed by TestEveryExampleRuns) nor %s<why> -->", name, i+1, sampleMarker, notReplayed)
				}
			}
			i = j
		}
	}
	t.Logf("%d samples replayed, %d recorded and not replayed", replayed, recorded)
	if replayed < 10 {
		t.Errorf("%d samples replayed: the walk misses some", replayed)
	}
}

// showsOutput says whether a block's lines are a shell session that shows output: a "$ " line
// followed by one that is neither a command nor its continuation.
func showsOutput(block []string) bool {
	cmd, continued := false, false
	for _, l := range block {
		switch {
		case strings.HasPrefix(l, "$ "):
			cmd = true
		case cmd && !continued && strings.TrimSpace(l) != "":
			return true
		}
		continued = strings.HasSuffix(l, "\\")
	}
	return false
}

// markerBefore is the line before a fence, the blank lines between skipped.
func markerBefore(lines []string, fenceAt int) string {
	for k := fenceAt - 1; k >= 0; k-- {
		if l := strings.TrimSpace(lines[k]); l != "" {
			return l
		}
	}
	return ""
}
