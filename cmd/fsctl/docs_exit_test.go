package main

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// The exit statuses have one source: exit.go's constants, which README's "Conventions" table
// states; every other sentence of the documents that states a status must agree with it.
//
// What is a statement (exitStatements): the word exit, exits, exited or exiting, optionally
// "with", "status"/"code" and "is", then a status — "exit 3", "exits 4 when", "(exit 2)", "Exit
// status: 0 all good, 1 ...", "exit 0/3" — and the statuses listed after it, each after a comma,
// semicolon, slash, "or" or "and". A table cell under a header naming exit statuses is such a
// list too. What a status means is read from its own words up to the next one (exitMeaning);
// a status alone ("(exit 2)", "a file that cannot be read exits 1") takes them from the nearest
// of the two clauses before it that says anything. Statuses above 4 (a signal's 137, another
// program's) are not fsctl's and not read; a statement whose words point at no status, or at two,
// is not judged.
type exitStatement struct {
	line    int
	status  int
	meaning string
}

var (
	exitWord = regexp.MustCompile(`(?i)\bexit(?:s|ed|ing)?(?:\s+with)?(?:\s+(?:status(?:es)?|codes?))?(?:\s+is)?\s*:?\s*(\d{1,3})\b`)
	// exitNext is the next status of a list: a separator, a status, then no more digits.
	exitNext = regexp.MustCompile(`(?:[,;/]\s*|\s+(?:or|and)\s+)([0-4])(?:[\s,;:/)]|$)`)
	// sentenceEnd ends a sentence: . ! or ? before a space and a capital, code, a link or a parenthesis.
	sentenceEnd = regexp.MustCompile("[.!?]\\s+[A-Z`(\\[*]")
)

// sentences splits a unit's text into sentences, by offset: [start, end) pairs.
func sentences(text string) [][2]int {
	var out [][2]int
	start := 0
	for _, m := range sentenceEnd.FindAllStringIndex(text, -1) {
		out = append(out, [2]int{start, m[0] + 1})
		start = m[1] - 1
	}
	return append(out, [2]int{start, len(text)})
}

// exitStatements finds the statements of exit status in a unit of prose.
func exitStatements(u proseUnit) []exitStatement {
	var out []exitStatement
	for _, se := range sentences(u.text) {
		s := u.text[se[0]:se[1]]
		for _, m := range exitWord.FindAllStringSubmatchIndex(s, -1) {
			// the list: each status's offset in s, and where its words end
			type item struct{ at, num, end int }
			items := []item{{at: m[2], num: m[3]}}
			rest := m[3]
			for {
				n := exitNext.FindStringSubmatchIndex(s[rest:])
				if n == nil || strings.ContainsAny(s[rest:rest+n[0]], ".;") || depthAfter(s[rest:rest+n[0]]) != 0 {
					break
				}
				items[len(items)-1].end = rest + n[0]
				items = append(items, item{at: rest + n[2], num: rest + n[3]})
				rest += n[3]
			}
			items[len(items)-1].end = clauseEnd(s, rest)
			for i, it := range items {
				st, _ := strconv.Atoi(s[it.at:it.num])
				if st > exitInvariant {
					continue
				}
				meaning := strings.TrimSpace(s[it.num:it.end])
				if _, ok := exitMeaning(meaning); !ok && len(items) == 1 {
					meaning = clauseBefore(s[:m[0]])
				}
				if i == 0 && len(items) == 1 && meaning == "" {
					continue
				}
				out = append(out, exitStatement{line: u.lineAt(se[0] + it.at), status: st, meaning: meaning})
			}
		}
	}
	return out
}

// depthAfter is how many parentheses s leaves open (negative: closes ones opened before it).
func depthAfter(s string) int { return strings.Count(s, "(") - strings.Count(s, ")") }

// clauseEnd is where the words of the list's last status, from offset from, end: a semicolon,
// or a parenthesis closing one opened before it.
func clauseEnd(s string, from int) int {
	depth := 0
	for i := from; i < len(s); i++ {
		switch s[i] {
		case '(':
			depth++
		case ')':
			depth--
			if depth < 0 {
				return i
			}
		case ';':
			if depth == 0 {
				return i
			}
		}
	}
	return len(s)
}

// clauseBefore is the nearest of the two clauses before a lone status (split at , ; and
// parentheses) whose words mean something, or "".
var clauseSplit = regexp.MustCompile(`[,;()]`)

func clauseBefore(s string) string {
	parts := clauseSplit.Split(s, -1)
	for i, seen := len(parts)-1, 0; i >= 0 && seen < 2; i-- {
		if strings.TrimSpace(parts[i]) == "" {
			continue
		}
		seen++
		if len(exitStatusesMeant(parts[i])) > 0 {
			return strings.TrimSpace(parts[i])
		}
	}
	return ""
}

// exitParts splits a status's words into the things it lists ("an invariant broken or a bad flag").
var exitParts = regexp.MustCompile(`\s+or\s+|[,;]`)

// contradiction is the first listed thing of the statement's words that means another status than
// the one stated, and that status; "" when none does.
func (st exitStatement) contradiction() (means int, part string) {
	for _, p := range exitParts.Split(st.meaning, -1) {
		if m, ok := exitMeaning(p); ok && m != st.status {
			return m, strings.TrimSpace(p)
		}
	}
	return 0, ""
}

func TestDocsExitCodesAgreeWithTheTable(t *testing.T) {
	docs := markdownFiles(t, "../..", false)
	checkConventionsTable(t, docs["README.md"])
	for _, name := range slices.Sorted(maps.Keys(docs)) {
		for _, u := range proseUnits(docs[name]) {
			for _, st := range exitStatements(u) {
				if means, part := st.contradiction(); part != "" {
					t.Errorf("%s:%d: exit %d for %q, which is exit %d (cmd/fsctl/exit.go; README, \"Conventions\"): %q",
						name, st.line, st.status, part, means, st.meaning)
				}
			}
		}
	}
}

// checkConventionsTable checks README's exit status table against exit.go: a row for each status,
// whose meaning reads as that status.
func checkConventionsTable(t *testing.T, readme string) {
	t.Helper()
	_, conv, _ := strings.Cut(readme, "\n## Conventions\n")
	conv, _, _ = strings.Cut(conv, "\n## ")
	rows := regexp.MustCompile(`(?m)^\|\s*(\d)\s*\|(.+)\|\s*$`).FindAllStringSubmatch(conv, -1)
	var seen []int
	for _, r := range rows {
		st, _ := strconv.Atoi(r[1])
		seen = append(seen, st)
		if means, ok := exitMeaning(r[2]); !ok || means != st {
			t.Errorf("README.md, Conventions: status %d reads as %s: %q", st, fmt.Sprint(means), r[2])
		}
	}
	if want := []int{0, exitFailed, exitUsage, exitCheck, exitInvariant}; !slices.Equal(seen, want) {
		t.Errorf("README.md, Conventions: the exit status table has rows %v, want %v (cmd/fsctl/exit.go)", seen, want)
	}
}
