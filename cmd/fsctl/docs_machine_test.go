package main

import (
	"maps"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// Nothing of one machine in the documents (every *.md, docs/cli included): no absolute path of a
// home or checkout (/root, /home, /Users, /work), no temporary folder a run made (/tmp/TestX123/001,
// /tmp/go-build123, /tmp/tmp.Ab12Cd), no machine named as a game day's report names it ("vm: 2
// CPU cores"), and not the name of the machine the test runs on. An example a reader types
// (--dir /tmp/gd, /home/you) is not one machine's.
var (
	// machinePath is an absolute path under a folder that belongs to one machine, where a path
	// starts (not inside a URL or a relative path).
	machinePath = regexp.MustCompile("(?:^|[\\s\"'(`=\\[<])(/(?:root|home|Users|work|tmp|private/var|var/folders)(?:/[^\\s\"'()`,;<>\\]|]*)?)")
	// tempPart is a name a program made up: a test's or the go tool's temporary folder, mktemp's,
	// or one numbered by a process id or a random suffix.
	tempPart = regexp.MustCompile(`^(?:Test\w*\d{3,}|go-build\w*|tmp\.\w{6,}|.*\d{5,}.*)$`)
	// machineLine is how a game day's report names the machine it ran on.
	machineLine = regexp.MustCompile(`(?:^|[\s(])([\w.-]+): \d+ CPU cores?\b`)
)

// placeholderUsers are the user names an example's home folder may take.
var placeholderUsers = []string{"you", "user", "me", "USER", "$USER", "<user>", "<you>", "name"}

// machineFinding says what of one machine line holds, or "".
func machineFinding(line, host string) string {
	for _, m := range machinePath.FindAllStringSubmatch(line, -1) {
		p := strings.TrimRight(m[1], ".:")
		parts := strings.Split(strings.TrimPrefix(p, "/"), "/")
		switch parts[0] {
		case "tmp", "private", "var":
			if slices.ContainsFunc(parts[1:], tempPart.MatchString) {
				return "the temporary folder " + p
			}
		case "home", "Users":
			if len(parts) > 1 && !slices.Contains(placeholderUsers, parts[1]) {
				return "the home folder " + p
			}
		default:
			return "the path " + p
		}
	}
	if m := machineLine.FindStringSubmatch(line); m != nil {
		return "the machine name " + m[1] + " (a game day report's)"
	}
	if host != "" && host != "localhost" && hostWord(host).MatchString(line) {
		return "this machine's name " + host
	}
	return ""
}

// hostWord matches host as a word of its own.
func hostWord(host string) *regexp.Regexp {
	return regexp.MustCompile(`(?:^|[^\w-])` + regexp.QuoteMeta(host) + `(?:[^\w-]|$)`)
}

func TestDocsHoldNoMachinePaths(t *testing.T) {
	host, _ := os.Hostname()
	files := markdownFiles(t, "../..", true)
	for _, name := range slices.Sorted(maps.Keys(files)) {
		for i, line := range strings.Split(files[name], "\n") {
			if f := machineFinding(line, host); f != "" {
				t.Errorf("%s:%d: %s is one machine's, not the reader's", name, i+1, f)
			}
		}
	}
}

func TestMachineFinding(t *testing.T) {
	for _, c := range []struct {
		line string
		bad  bool
	}{
		{"fsctl gameday --dir /tmp/gd --report-dir /tmp/gd/report", false},
		{"export FSCTL_STACK_DIR=/tmp/mine", false},
		{"`make test STACK_FLAGS='--dir /tmp/ci'`", false},
		{"the default report folder is /tmp.", false},
		{"mkdir -p /home/you/sales", false},
		{"https://example.com/home/x and deploy/work/y", false},
		{"started redis in /work/main/.stack", true},
		{"export FSCTL_REDIS_CA=/work/main/.stack-secure/tls/ca.pem", true},
		{"(/root/go/bin/golangci-lint)", true},
		{"/Users/alice/fsctl", true},
		{"written to /tmp/TestBlast123456/001/report.md", true},
		{"go: /tmp/go-build2291/b001", true},
		{"mktemp gave /tmp/tmp.Xa81kQz0", true},
		{"game day default (seed 42) on ci-7: 2 CPU cores (Xeon), 24 GiB RAM", true},
		{"ran on buildhost-42 yesterday", true},
		{"buildhost-42s", false},
	} {
		if got := machineFinding(c.line, "buildhost-42") != ""; got != c.bad {
			t.Errorf("machineFinding(%q) = %q, want a finding: %v", c.line, machineFinding(c.line, "buildhost-42"), c.bad)
		}
	}
}
