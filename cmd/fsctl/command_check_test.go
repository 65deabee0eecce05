package main

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// fullTree is the command tree as a command line meets it: with cobra's help and completion
// commands and the --help and --version flags it adds when it executes.
func fullTree() *cobra.Command {
	root := newRootCmd()
	root.InitDefaultHelpCmd()
	root.InitDefaultCompletionCmd()
	root.InitDefaultVersionFlag()
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		c.InitDefaultHelpFlag()
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
	return root
}

// checkCommand checks the words after fsctl against the tree under root.
func checkCommand(root *cobra.Command, words []string) error {
	cmd, i := root, 0
	for ; i < len(words) && !strings.HasPrefix(words[i], "-"); i++ {
		sub := findSub(cmd, words[i])
		if sub == nil {
			break
		}
		cmd = sub
	}
	if cmd.Deprecated != "" {
		return fmt.Errorf("%s is deprecated: %s", cmd.CommandPath(), cmd.Deprecated)
	}
	if i < len(words) && !strings.HasPrefix(words[i], "-") && cmd.Args == nil && (!cmd.Runnable() || !cmd.HasParent()) {
		return fmt.Errorf("unknown command %q for %s", words[i], cmd.CommandPath())
	}
	var positional []string
	for ; i < len(words); i++ {
		w := words[i]
		var f *pflag.Flag
		switch {
		case w == "--":
			positional = append(positional, words[i+1:]...)
			i = len(words)
			continue
		case strings.HasPrefix(w, "--"):
			name, _, withValue := strings.Cut(w[2:], "=")
			if f = lookupFlag(cmd, name, ""); f == nil {
				return fmt.Errorf("unknown flag --%s for %s", name, cmd.CommandPath())
			}
			if f.Deprecated != "" {
				return fmt.Errorf("--%s of %s is deprecated: %s", name, cmd.CommandPath(), f.Deprecated)
			}
			if !withValue && f.NoOptDefVal == "" {
				i++ // its value
			}
		case len(w) > 1 && w[0] == '-' && (w[1] < '0' || w[1] > '9'):
			if f = lookupFlag(cmd, "", w[1:2]); f == nil {
				return fmt.Errorf("unknown shorthand flag -%s for %s", w[1:2], cmd.CommandPath())
			}
			if f.Deprecated != "" || f.ShorthandDeprecated != "" {
				return fmt.Errorf("-%s of %s is deprecated: %s", w[1:2], cmd.CommandPath(), f.Deprecated+f.ShorthandDeprecated)
			}
			if len(w) == 2 && f.NoOptDefVal == "" {
				i++
			}
		default:
			positional = append(positional, w)
		}
	}
	if len(positional) == 0 {
		return nil
	}
	if cmd.Args == nil && (!cmd.Runnable() || (!cmd.HasParent() && cmd.HasSubCommands())) {
		return fmt.Errorf("unknown command %q for %s", positional[0], cmd.CommandPath())
	}
	if cmd.Args != nil {
		if err := cmd.Args(cmd, positional); err != nil {
			return fmt.Errorf("%s %s: %w", cmd.CommandPath(), strings.Join(positional, " "), err)
		}
	}
	return nil
}

// findSub is cmd's subcommand called name (or aliased so).
func findSub(cmd *cobra.Command, name string) *cobra.Command {
	for _, c := range cmd.Commands() {
		if c.Name() == name || slices.Contains(c.Aliases, name) {
			return c
		}
	}
	return nil
}

// lookupFlag finds a flag of cmd, its own or inherited, by name or by shorthand.
func lookupFlag(cmd *cobra.Command, name, short string) *pflag.Flag {
	for _, fs := range []*pflag.FlagSet{cmd.Flags(), cmd.InheritedFlags()} {
		if name != "" {
			if f := fs.Lookup(name); f != nil {
				return f
			}
		} else if f := fs.ShorthandLookup(short); f != nil {
			return f
		}
	}
	return nil
}

// TestCheckCommand pins what checkCommand accepts and refuses.
func TestCheckCommand(t *testing.T) {
	root := fullTree()
	for _, tc := range []struct {
		words string
		want  string // "" when accepted
	}{
		{"", ""},
		{"--version", ""},
		{"sale show --sale s -o json", ""},
		{"warroom --sale s --once --fail-on=none --help", ""},
		{"help warroom", ""},
		{"completion bash", ""},
		{"stack", ""},
		{"admin pause", `unknown command "admin" for fsctl`},
		{"stack upp", `unknown command "upp" for fsctl stack`},
		{"warroom --sale s pause", "pause"},
		{"warroom --sale s --no-such-flag", "unknown flag --no-such-flag"},
		{"warroom -Z", "unknown shorthand flag -Z"},
		{"demo --room 5", "deprecated"},
	} {
		err := checkCommand(root, strings.Fields(tc.words))
		if (tc.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("fsctl %s: %v, want %q", tc.words, err, tc.want)
		}
	}
}
