package main

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// flagUse is one flag as one command defines it.
type flagUse struct {
	path string
	flag *pflag.Flag
}

// everyFlag is every flag of every command under root, where it is defined (a persistent flag
// once, on the command that declares it), with cobra's own --help and --version added as
// executing the tree adds them.
func everyFlag(root *cobra.Command) []flagUse {
	var out []flagUse
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		c.InitDefaultHelpFlag()
		c.InitDefaultVersionFlag()
		seen := map[string]bool{}
		for _, fs := range []*pflag.FlagSet{c.PersistentFlags(), c.LocalNonPersistentFlags(), c.Flags()} {
			fs.VisitAll(func(f *pflag.Flag) {
				if !seen[f.Name] && (fs != c.Flags() || c.InheritedFlags().Lookup(f.Name) == nil) {
					seen[f.Name] = true
					out = append(out, flagUse{c.CommandPath(), f})
				}
			})
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
	return out
}

// renamed is every flag name retired for another this release (README, "Conventions"): the old one
// stays for one release as a deprecated alias, hidden, and may not come back with a meaning of its
// own. Drop a line when its alias goes. (An alias whose name keeps its meaning elsewhere is not
// listed: --kafka-brokers on stack and gameday, --file of profile, --room of demo; the type rule
// holds those.)
var renamed = map[string]string{
	"record":   "records", // warroom: JSON lines are --records, as blast writes them
	"scenario": "file",    // gameday: -f is --file on every command
	"server":   "target",  // preflight, warroom
}

// valueType is a flag's type with repetition set aside: --target is a URL whether a command takes
// one or, reading every instance, several.
func valueType(f *pflag.Flag) string {
	return strings.TrimSuffix(strings.TrimSuffix(f.Value.Type(), "Slice"), "Array")
}

// TestAFlagNameHasOneMeaning walks the whole tree (README, "Conventions"): a flag name has one
// value type everywhere, a one-letter shorthand stands for one flag name everywhere, and a name
// renamed lives on only as a deprecated alias. A
// deprecated alias (hidden, for one release) is exempt; a deprecated shorthand too.
func TestAFlagNameHasOneMeaning(t *testing.T) {
	types := map[string]map[string][]string{}  // name → type → paths
	shorts := map[string]map[string][]string{} // letter → name → paths
	for _, u := range everyFlag(newRootCmd()) {
		f := u.flag
		if f.Deprecated != "" {
			continue
		}
		add(types, f.Name, valueType(f), u.path)
		if f.Shorthand != "" && f.ShorthandDeprecated == "" {
			add(shorts, f.Shorthand, f.Name, u.path)
		}
	}
	for name, byType := range types {
		if len(byType) > 1 {
			t.Errorf("--%s has %d types: %s", name, len(byType), describe(byType))
		}
	}
	for old, name := range renamed {
		if byType := types[old]; byType != nil {
			t.Errorf("--%s was renamed --%s, yet means something of its own on %s", old, name, describe(byType))
		}
	}
	for letter, byName := range shorts {
		if len(byName) > 1 {
			t.Errorf("-%s stands for %d flags: %s", letter, len(byName), describe(byName))
		}
	}
}

func add(m map[string]map[string][]string, k, v, path string) {
	if m[k] == nil {
		m[k] = map[string][]string{}
	}
	m[k][v] = append(m[k][v], path)
}

func describe(m map[string][]string) string {
	var parts []string
	for k, paths := range m {
		parts = append(parts, fmt.Sprintf("%s on %s", k, strings.Join(paths, ", ")))
	}
	slices.Sort(parts)
	return strings.Join(parts, "; ")
}

// TestRenamedFlagsStillWork: each old spelling still sets what its new name sets, for one release,
// and says it is deprecated; the new spelling says nothing.
func TestRenamedFlagsStillWork(t *testing.T) {
	for _, tc := range []struct {
		path      string
		old, now  []string // the old spelling and the new
		flag, val string
	}{
		{"stack up", []string{"--kafka-brokers", "3"}, []string{"--kafka-cluster", "3"}, "kafka-cluster", "3"},
		{"gameday", []string{"--kafka-brokers", "3"}, []string{"--kafka-cluster", "3"}, "kafka-cluster", "3"},
		{"stack env", []string{"--redis-cluster"}, []string{"--use-redis-cluster"}, "use-redis-cluster", "true"},
		{"stack env", []string{"--kafka-cluster"}, []string{"--use-kafka-cluster"}, "use-kafka-cluster", "true"},
		{"gameday", []string{"--scenario", "x.yaml"}, []string{"-f", "x.yaml"}, "file", "x.yaml"},
		{"warroom", []string{"--record", "x.jsonl"}, []string{"--records", "x.jsonl"}, "records", "x.jsonl"},
		{"demo", []string{"-v"}, []string{"--verbose"}, "verbose", "true"},
		{"profile tokens", []string{"--output", "t.txt"}, []string{"--out", "t.txt"}, "out", "t.txt"},
	} {
		for i, args := range [][]string{tc.old, tc.now} {
			var out bytes.Buffer
			root := newRootCmd()
			root.SetOut(&out)
			c, _, err := root.Find(strings.Fields(tc.path))
			if err != nil {
				t.Fatal(err)
			}
			if err := c.ParseFlags(args); err != nil {
				t.Errorf("%s %v: %v", tc.path, args, err)
				continue
			}
			if got := c.Flags().Lookup(tc.flag).Value.String(); got != tc.val {
				t.Errorf("%s %v: --%s is %q, want %q", tc.path, args, tc.flag, got, tc.val)
			}
			if deprecated := strings.Contains(out.String(), "deprecated"); deprecated != (i == 0) {
				t.Errorf("%s %v: printed %q", tc.path, args, out.String())
			}
		}
	}
	// The one --rate: a bare number is per second, as a scenario's rate: is.
	for _, path := range []string{"blast", "gameday", "gameday drill"} {
		root := newRootCmd()
		c, _, _ := root.Find(strings.Fields(path))
		for in, want := range map[string]string{"60": "60/s", "600/m": "10/s", "2.5/s": "2.5/s"} {
			if err := c.ParseFlags([]string{"--rate", in}); err != nil || c.Flags().Lookup("rate").Value.String() != want {
				t.Errorf("%s --rate %s: %v, %s; want %s", path, in, err, c.Flags().Lookup("rate").Value, want)
			}
		}
	}
}
