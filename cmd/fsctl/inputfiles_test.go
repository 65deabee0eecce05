package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// goTypeWords are the marks of a message in Go's words rather than the file's: a YAML tag, a
// package-qualified type (sale.Sale, time.Duration), yaml.v3's own phrasing.
var goTypeWords = regexp.MustCompile(`!!|\b[a-z]\w*\.[A-Z]\w*|unmarshal|not found in type`)

// TestInputFileMistakes: every command that reads a YAML file gives one answer to each mistake,
// decided in one place (exitCode): a file that cannot be read exits 1; a file that is read but
// wrong exits 2 with the file named once, the line, the field, a "did you mean" for a near miss
// and a value explained in the user's words, never a Go type. The files are read before anything
// connects, so none of this needs the stack.
func TestInputFileMistakes(t *testing.T) {
	type mistake struct {
		doc, want string
		line      int
	}
	for _, c := range []struct {
		name     string
		args     func(file string) []string
		nearMiss mistake
		badValue mistake
	}{
		{
			name: "sale create",
			args: func(f string) []string { return []string{"sale", "create", "-f", f} },
			nearMiss: mistake{"id: s1\nopensAt: 2026-12-01T12:00:00Z\nperUserLimt: 2\nitems: [{id: a, quantity: 1}]\n",
				"perUserLimt: unknown key (did you mean perUserLimit? known: id, name, opensAt, perUserLimit,", 3},
			badValue: mistake{"id: s1\nopensAt: 2026-12-01T12:00:00Z\nholdTTL: 10 minutes\nitems: [{id: a, quantity: 1}]\n",
				`holdTTL: "10 minutes" is not a duration: write it like 90s, 10m or 1h30m`, 3},
		},
		{
			name: "demo",
			args: func(f string) []string { return []string{"demo", "--item", "a", "-f", f} },
			nearMiss: mistake{"id: s1\nopensAt: 2026-12-01T12:00:00Z\nitems:\n  - id: a\n    quantty: 1\n",
				"items[0].quantty: unknown key (did you mean quantity? known: id, name, quantity, priceCents, shards)", 5},
			badValue: mistake{"id: s1\nopensAt: 2026-12-01T12:00:00Z\nroom:\n  enabled: true\n  waiterTTL: half a minute\n",
				`room.waiterTTL: "half a minute" is not a duration`, 5},
		},
		{
			name:     "gameday",
			args:     func(f string) []string { return []string{"gameday", "-f", f} },
			nearMiss: mistake{"name: x\nseed: 1\nstepz: []\n", "stepz: unknown key (did you mean steps? known: name, seed,", 3},
			badValue: mistake{"name: x\nsettle: 10 minutes\n", `settle: "10 minutes" is not a duration: write it like 90s, 10m or 1h30m`, 2},
		},
		{
			name:     "profile check",
			args:     func(f string) []string { return []string{"profile", "check", "--sale", "s", "--profile", f} },
			nearMiss: mistake{"name: shop\nnmae: x\n", "nmae: unknown key (did you mean name? known: name, description, deep,", 2},
			badValue: mistake{"name: shop\ntoken:\n  ttl: 10 minutes\n", `token.ttl: "10 minutes" is not a duration`, 3},
		},
		{
			name: "blast --classify",
			args: func(f string) []string {
				return []string{"blast", "--sale", "s", "--item", "i", "--target", "http://127.0.0.1:1", "--classify", f}
			},
			nearMiss: mistake{"rules:\n  - stauts: 410\n    outcome: SOLD_OUT\n",
				"rules[0].stauts: unknown key (did you mean status? known: status, field, value, match, outcome)", 2},
			badValue: mistake{"rules:\n  - status: gone\n    outcome: SOLD_OUT\n", `rules[0].status: "gone" is not a whole number`, 2},
		},
		{
			name:     "warroom --alerts",
			args:     func(f string) []string { return []string{"warroom", "--sale", "s", "--once", "--alerts", f} },
			nearMiss: mistake{"rules:\n  - metric: consumer_lag\n    wran: 5\n", "rules[0].wran: unknown key (did you mean warn? known: metric, warn, crit, below, for)", 3},
			badValue: mistake{"rules:\n  - metric: drift_units\n    crit: 1\n    for: 3 seconds\n", `rules[0].for: "3 seconds" is not a duration`, 4},
		},
		{
			// Not YAML, but files the commands read: a missing one is the same answer.
			name: "blast merge",
			args: func(f string) []string { return []string{"blast", "merge", f} },
		},
		{
			name: "blast --tokens",
			args: func(f string) []string {
				return []string{"blast", "--sale", "s", "--item", "i", "--target", "http://127.0.0.1:1", "--tokens", f}
			},
		},
		{
			name: "health --cacert",
			args: func(f string) []string { return []string{"health", "--target", "https://127.0.0.1:1", "--cacert", f} },
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			missing := filepath.Join(dir, "missing.yaml")
			_, code, err := runCLI(t, c.args(missing)...)
			if code != exitFailed || err == nil || !strings.Contains(err.Error(), missing) || !strings.Contains(err.Error(), "no such file") {
				t.Errorf("missing file: exit %d, %v; want exit %d naming the file", code, err, exitFailed)
			}
			for kind, m := range map[string]mistake{"near miss": c.nearMiss, "bad value": c.badValue} {
				if m.doc == "" {
					continue
				}
				file := filepath.Join(dir, strings.ReplaceAll(kind, " ", "-")+".yaml")
				if err := os.WriteFile(file, []byte(m.doc), 0o600); err != nil {
					t.Fatal(err)
				}
				_, code, err := runCLI(t, c.args(file)...)
				if code != exitUsage || err == nil {
					t.Errorf("%s: exit %d, %v; want exit %d", kind, code, err, exitUsage)
					continue
				}
				msg := err.Error()
				want := file + ": line " + strconv.Itoa(m.line) + ": " + m.want
				if !strings.HasPrefix(msg, want) || strings.Count(msg, file) != 1 {
					t.Errorf("%s:\n got %s\nwant %s…", kind, msg, want)
				}
				if words := goTypeWords.FindString(strings.ReplaceAll(msg, file, "")); words != "" {
					t.Errorf("%s: %q is in Go's words: %s", kind, words, msg)
				}
			}
		})
	}
}
