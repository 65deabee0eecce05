package main

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// exitWords is what each exit status means (exit.go; README, "Conventions"), as the words a
// document uses for it. The rules are tried in order on the lower-cased text, and each match is
// blanked before the next rule, so "not ready" is never read as "ready", nor "never oversold" as
// an oversell. A rule of status -1 only blanks words that would mislead a later one.
var exitWords = []struct {
	status int
	words  *regexp.Regexp
}{
	{-1, regexp.MustCompile(`\balerts? (?:file|rules?)\b|\bnothing (?:was|is) done\b`)},
	{exitCheck, regexp.MustCompile(`\bnot (?:yet )?ready\b`)},
	{0, regexp.MustCompile(`\b(?:nothing (?:was |is )?oversold|never oversells?|never oversold|no oversells?|(?:every |all |the |each )?invariants? (?:held|holds?))\b`)},
	{exitInvariant, regexp.MustCompile(`\binvariants?\b|\boversell|\boversold\b|\blost (?:an? )?(?:acknowledged )?orders?\b|\b(?:acknowledged )?orders? (?:was |were |is |are )?lost\b|\bviolations?\b|\bdisagree|\bdata at risk\b`)},
	{exitCheck, regexp.MustCompile(`\bthresholds?\b|\bmissed\b|\bchecks? (?:failed|fails)\b|\bfailed checks?\b|\bfindings?\b|\balerts?\b|\bbudgets?\b|\bpending\b|\bservices? (?:is |are )?down\b`)},
	{exitUsage, regexp.MustCompile(`\busage\b|\b(?:bad|unknown|missing|wrong|invalid) (?:flags?|commands?|values?|arguments?)\b|\btypos?\b`)},
	{exitFailed, regexp.MustCompile(`\b(?:could not|couldn't|cannot|can't|can not) (?:run|start|connect|reach|read|be read|be reached|go on)\b|\bunreachable\b|\bnot reachable\b`)},
	{0, regexp.MustCompile(`\ball good\b|\bpass(?:ed|es)?\b|\bok\b|\bready\b|\bhealthy\b|\bsucce(?:ss|eds|eded)\b|\bagrees?\b|\bheld\b`)},
}

// exitMeaning is the status text says it means, and ok when its words point at exactly one: none
// or two different ones (ambiguous) say nothing.
func exitMeaning(text string) (status int, ok bool) {
	if st := exitStatusesMeant(text); len(st) == 1 {
		return st[0], true
	}
	return -1, false
}

// exitStatusesMeant is every status text's words point at, in order.
func exitStatusesMeant(text string) []int {
	s := strings.ToLower(text)
	var found []int
	for _, m := range exitWords {
		s = m.words.ReplaceAllStringFunc(s, func(w string) string {
			if m.status >= 0 && !slices.Contains(found, m.status) {
				found = append(found, m.status)
			}
			return strings.Repeat(" ", len(w))
		})
	}
	slices.Sort(found)
	return found
}

func TestExitMeaningClassifier(t *testing.T) {
	for _, c := range []struct {
		text string
		want int // -1: says nothing
	}{
		{"all good", 0},
		{"when every phase, step and invariant held", 0},
		{"ready", 0},
		{"pass", 0},
		{"nothing was oversold", 0},
		{"a store unreachable", exitFailed},
		{"a run that could not go on", exitFailed},
		{"when warroom could not start", exitFailed},
		{"a file that cannot be read", exitFailed},
		{"for a bad flag or alerts file", exitUsage},
		{"a usage error", exitUsage},
		{"an unknown flag", exitUsage},
		{"not ready", exitCheck},
		{"a threshold missed (`--max-p99`, `--min-throughput`)", exitCheck},
		{"when a critical alert fires", exitCheck},
		{"only the availability budget (or the soak) missed", exitCheck},
		{"a migration pending", exitCheck},
		{"an invariant broken", exitInvariant},
		{"when an invariant is broken over the union (an oversell can show only there)", exitInvariant},
		{"the stores disagree", exitInvariant},
		{"on any violation", exitInvariant},
		{"an acknowledged order lost", exitInvariant},
		// nothing, or two meanings at once: no verdict.
		{"otherwise", -1},
		{"healthy", 0},
		{"unhealthy (any failure: a container health check's contract)", -1},
		{"for anything else", -1},
		{"when one did not (or the scenario file is malformed)", -1},
		{"a threshold missed or an invariant broken", -1},
		{"the check is not ready or unreachable", -1},
	} {
		got, ok := exitMeaning(c.text)
		if !ok {
			got = -1
		}
		if got != c.want {
			t.Errorf("exitMeaning(%q) = %d, want %d", c.text, got, c.want)
		}
	}
}

// TestExitStatementsInSentences reads sentences as the documents write them: want lists each
// contradiction found as "stated->meant", none for a sentence that agrees or says nothing.
func TestExitStatementsInSentences(t *testing.T) {
	for _, c := range []struct {
		text string
		want []string
	}{
		{"It exits 4 when an invariant is broken.", nil},
		{"Exit status: 0 all good, 1 a threshold missed (`--max-p99`, `--min-throughput`), 2 an invariant broken or a bad flag.", []string{"1->3", "2->4"}},
		{"Exit status 0 ready, 1 not ready (`--strict` counts warnings too).", []string{"1->3"}},
		{"Exit status 0 when everything agrees, 1 on any violation; `--output json` for CI.", []string{"1->4"}},
		{"Merge exits 2 when an invariant is broken over the union (an oversell can show only there), 1 when a threshold is missed.", []string{"2->4", "1->3"}},
		{"Exit 4 (the stores disagree) or 2 fails the Job at once, 1 (a store unreachable) is retried once.", nil},
		{"The exit status is 0 pass, 4 an invariant broken, 3 only the availability budget (or the soak) missed, 1 a run that could not go on.", nil},
		{"Exit status: 0; 1 when warroom could not start; 2 for a bad flag or alerts file; 3 when a snapshot shows an alert.", nil},
		{"A wrong part is a usage error (exit 2) naming its flag.", nil},
		{"A wrong part is a usage error (exit 3) naming its flag.", []string{"3->2"}},
		{"Values out of range are errors naming the line (exit 2; a file that cannot be read exits 1).", nil},
		{"a failed Job (an invariant broken, exit 3) is what an alert sees", []string{"3->4"}},
		{"A snapshot with a critical alert firing exits 3 unless told otherwise.", nil},
		{"It GETs /healthz and exits 0 on a 200, 1 otherwise.", nil},
		{"server-3 (pid 11179) exited 137 after an invariant broke", nil},
		{"JSON, exit 0 / 3, and `--strict` on the single-node stack's warnings.", nil},
		{"reported as an oversell with exit 4, its state check failing too; a flaky server caught; an unreachable target refused; 2 items", nil},
		{"exit statuses: 0, 1, 2, 3 threshold missed, 4 oversell or a lost order", nil},
		{"exit statuses: 0, 1, 2, 3 an oversell", []string{"3->4"}},
	} {
		var got []string
		for _, st := range exitStatements(proseUnit{line: 1, starts: []int{0}, text: c.text}) {
			if means, part := st.contradiction(); part != "" {
				got = append(got, fmt.Sprintf("%d->%d", st.status, means))
			}
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("%q: contradictions %v, want %v", c.text, got, c.want)
		}
	}
}
