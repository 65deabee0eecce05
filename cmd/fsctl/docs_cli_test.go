package main

import (
	"bytes"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// readDir is every file of dir by name (none when dir is missing).
func readDir(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	files := map[string][]byte{}
	for _, e := range entries {
		if e.IsDir() {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		files[e.Name()] = b
	}
	return files
}

// TestCLIReferenceIsCurrent generates the CLI reference as `make docs` does and fails when
// docs/cli is not it: a page that differs, is missing or should not be there. Every FSCTL_*
// variable the reference names is set to a value of this test's first, so a flag default taken
// from the environment (a URL, a secret) that reached the reference would show as a difference.
func TestCLIReferenceIsCurrent(t *testing.T) {
	checkedIn := readDir(t, filepath.Join("../..", docsDefaultDir))
	all := bytes.Join(slices.Collect(maps.Values(checkedIn)), nil)
	for _, v := range regexp.MustCompile(`\bFSCTL_[A-Z0-9_]*[A-Z0-9]\b`).FindAllString(string(all), -1) {
		t.Setenv(v, "leaked-from-the-environment")
	}
	dir := t.TempDir()
	if _, err := writeCLIReference(dir); err != nil {
		t.Fatal(err)
	}
	made := readDir(t, dir)
	var stale []string
	for name, b := range made {
		if old, ok := checkedIn[name]; !ok {
			stale = append(stale, name+" (missing)")
		} else if !bytes.Equal(old, b) {
			stale = append(stale, name+" (differs)")
		}
		if bytes.Contains(b, []byte("leaked-from-the-environment")) {
			t.Errorf("%s: a flag default comes from the environment (cliReference must unset it)", name)
		}
	}
	for name := range checkedIn {
		if _, ok := made[name]; !ok {
			stale = append(stale, name+" (no such command now)")
		}
	}
	if len(made) < 2 || made["fsctl.md"] == nil || made["README.md"] == nil {
		t.Fatalf("the reference has %d files, want fsctl.md, README.md and a page per command", len(made))
	}
	if len(stale) > 0 {
		slices.Sort(stale)
		t.Errorf("docs/cli is not what the command tree makes; run `make docs` and commit docs/cli:\n  %s",
			strings.Join(stale, "\n  "))
	}
}

// TestDocsGenIsHidden: the generator is the Makefile's, never in an operator's help.
func TestDocsGenIsHidden(t *testing.T) {
	root := newRootCmd()
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetArgs([]string{"--help"})
	if err := root.Execute(); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out.String(), "docs-gen") {
		t.Errorf("fsctl --help shows docs-gen:\n%s", out.String())
	}
}
