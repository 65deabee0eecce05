package main

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// commands lists every command a user runs (not cobra's help and completion), by path.
func commands(root *cobra.Command) []*cobra.Command {
	var out []*cobra.Command
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if c.Hidden || c.Name() == "help" || c.Name() == "completion" || strings.HasPrefix(c.Name(), "__") {
			return
		}
		if c.Runnable() {
			out = append(out, c)
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
	return out
}

// TestEveryCommandKeepsTheConventions walks the command tree, so a new command that breaks a
// convention fails here (README, "Conventions"): an unknown flag and a bad -o value are usage
// errors (exit 2) before anything runs; -o is the output format, table (text) or json; the shared
// flags have one type, one meaning and one environment variable; and the README's command table
// lists the command.
func TestEveryCommandKeepsTheConventions(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(readme), "## Conventions")
	if !ok {
		t.Fatal("README has no ## Conventions section")
	}
	table := "## Conventions" + rest
	for _, c := range commands(newRootCmd()) {
		path := c.CommandPath()
		args := strings.Fields(path)[1:]
		t.Run(strings.Join(args, "-"), func(t *testing.T) {
			if _, code, err := runCLI(t, append(slices.Clone(args), "--no-such-flag")...); code != exitUsage || err == nil {
				t.Errorf("an unknown flag: exit %d (%v), want %d", code, err, exitUsage)
			}
			if !regexp.MustCompile("(?m)^\\| `" + regexp.QuoteMeta(path) + "[ `]").MatchString(table) {
				t.Errorf("the README's Conventions table has no row for %s", path)
			}
			c.Flags().VisitAll(func(f *pflag.Flag) { checkSharedFlag(t, path, f) })
			o := c.Flags().Lookup("output")
			if o == nil || o.Deprecated != "" {
				return
			}
			if _, ok := o.Value.(*outputFlag); !ok || o.Shorthand != "o" || o.DefValue != "table" {
				t.Errorf("-o/--output is not the shared output format flag: %+v", o)
				return
			}
			for _, good := range []string{"table", "text", "json"} {
				if err := o.Value.Set(good); err != nil {
					t.Errorf("-o %s: %v", good, err)
				}
			}
			_, code, err := runCLI(t, append(slices.Clone(args), "-o", "bogus")...)
			if want := `--output "bogus": want table or json`; code != exitUsage || err == nil || err.Error() != want {
				t.Errorf("-o bogus: exit %d, %v; want exit %d, %s", code, err, exitUsage, want)
			}
		})
	}
}

// checkSharedFlag holds a flag with a shared name to its one meaning.
func checkSharedFlag(t *testing.T, path string, f *pflag.Flag) {
	t.Helper()
	if _, format := f.Value.(*outputFlag); f.Shorthand == "o" && (f.Name != "output" || !format) {
		// Even as a deprecated alias: `-o json` would write a file named json.
		t.Errorf("%s: -o is --%s (%s), want the output format", path, f.Name, f.Value.Type())
	}
	if f.Deprecated != "" {
		if !f.Hidden {
			t.Errorf("%s --%s: a deprecated alias must not show in --help", path, f.Name)
		}
		return
	}
	want := map[string]struct{ typ, env string }{
		"target":  {"", envTarget},
		"sale":    {"string", envSale},
		"item":    {"stringSlice", envItem},
		"profile": {"string", envProfile},
		"timeout": {"duration", ""},
		"output":  {"string", ""},
		"rate":    {"rate", ""},
	}
	if w, ok := want[f.Name]; ok {
		if w.typ != "" && f.Value.Type() != w.typ {
			t.Errorf("%s --%s is a %s, want %s", path, f.Name, f.Value.Type(), w.typ)
		}
		if w.env != "" && !strings.Contains(f.Usage, w.env) {
			t.Errorf("%s --%s does not name its variable %s: %q", path, f.Name, w.env, f.Usage)
		}
	}
	switch {
	case f.Name == "target" && f.Value.Type() != "string" && f.Value.Type() != "stringSlice":
		t.Errorf("%s --target is a %s", path, f.Value.Type())
	case f.Name == "max-skew" && f.DefValue != defaultMaxSkew.String():
		t.Errorf("%s --max-skew defaults to %s, want %s everywhere", path, f.DefValue, defaultMaxSkew)
	case f.Shorthand == "f" && f.Name != "file":
		t.Errorf("%s: -f is --%s, want the command's input file", path, f.Name)
	}
}

// TestExitStatusOfTheCommandLine: what cobra refuses before a command runs is a usage error too.
func TestExitStatusOfTheCommandLine(t *testing.T) {
	for _, args := range [][]string{
		{"no-such-command"},
		{"reconcile"},                   // --sale is required
		{"stack", "status", "extra"},    // no arguments
		{"blast", "--buyers", "x"},      // a bad value
		{"preflight", "--timeout", "x"}, // the same on every command
		{"gameday", "--redis-port", "x"},
	} {
		if _, code, err := runCLI(t, args...); code != exitUsage || err == nil {
			t.Errorf("%v: exit %d (%v), want %d", args, code, err, exitUsage)
		}
	}
}
