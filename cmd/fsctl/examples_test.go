package main

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"mvdan.cc/sh/v3/expand"
	"mvdan.cc/sh/v3/syntax"
)

// example is one fsctl command line of a command's Example (its --help). The Example is read as
// the shell would read it (mvdan.cc/sh): comments, quotes, `\` continuations, `$(...)`, pipes, `&`
// and `>` are the shell's; a command is an example when its first word is fsctl. Lines that are
// not fsctl's (curl) are the reader's, and lines indented deeper than the Example's first show
// what a command prints (commandLines): neither is run.
type example struct {
	owner      *cobra.Command
	line       string           // the Example's line, to name it
	call       *syntax.CallExpr // the command, its words unexpanded
	background bool             // ended by &: the next command of the line runs beside it
	pipe       string           // the program its stdout is piped into ("jq"), if any
	stdout     *syntax.Word     // the file > writes its stdout to, if any
	shows      []string         // the lines the Example shows it printing (a sample), if any
}

// commandLines is an Example's shell text: its lines at the Example's own indentation and their
// continuations; a line indented deeper shows what the command above it prints, and is blanked
// (so line numbers still point into the Example).
func commandLines(ex string) string {
	lines := strings.Split(ex, "\n")
	indent := func(l string) int { return len(l) - len(strings.TrimLeft(l, " ")) }
	base := indent(lines[0])
	continued := false
	for i, l := range lines {
		if !continued && indent(l) > base {
			lines[i] = ""
		}
		continued = strings.HasSuffix(l, "\\")
	}
	return strings.Join(lines, "\n")
}

// examples is every fsctl command line in the Example of every command under root.
func examples(t *testing.T, root *cobra.Command) []example {
	t.Helper()
	var out []example
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if c.Example != "" {
			out = append(out, examplesOf(t, c)...)
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
	return out
}

func examplesOf(t *testing.T, c *cobra.Command) []example {
	t.Helper()
	file, err := syntax.NewParser().Parse(strings.NewReader(commandLines(c.Example)), c.CommandPath())
	if err != nil {
		t.Errorf("%s: its Example does not read as a shell would: %v", c.CommandPath(), err)
		return nil
	}
	lines := strings.Split(c.Example, "\n")
	pipes := map[*syntax.CallExpr]string{}
	var out []example
	syntax.Walk(file, func(n syntax.Node) bool {
		switch n := n.(type) {
		case *syntax.BinaryCmd:
			x, okX := n.X.Cmd.(*syntax.CallExpr)
			y, okY := n.Y.Cmd.(*syntax.CallExpr)
			if n.Op == syntax.Pipe && okX && okY && len(y.Args) > 0 {
				pipes[x] = y.Args[0].Lit()
			}
		case *syntax.Stmt:
			call, ok := n.Cmd.(*syntax.CallExpr)
			if !ok || len(call.Args) == 0 || call.Args[0].Lit() != "fsctl" {
				return true
			}
			e := example{owner: c, line: strings.TrimSpace(lines[call.Pos().Line()-1]), call: call, background: n.Background}
			for _, r := range n.Redirs {
				if r.Op == syntax.RdrOut {
					e.stdout = r.Word
				}
			}
			out = append(out, e)
		}
		return true
	})
	for i := range out {
		out[i].pipe = pipes[out[i].call]
		out[i].shows = shownOutput(lines, int(out[i].call.End().Line()))
	}
	return out
}

// shownOutput is the sample an Example shows after the command that ends on line end (1-based):
// the lines below it indented deeper than the Example's commands, up to the next command.
func shownOutput(lines []string, end int) []string {
	indent := func(l string) int { return len(l) - len(strings.TrimLeft(l, " ")) }
	base := indent(lines[0])
	var shown []string
	for _, l := range lines[end:] {
		if strings.TrimSpace(l) == "" || indent(l) <= base {
			break
		}
		shown = append(shown, strings.TrimSpace(l))
	}
	return shown
}

// shell is how the examples' words expand: env is the environment (an unset variable is an error:
// the test must give every variable an example uses), and globs match in the working directory.
func shell(env map[string]string, glob bool) *expand.Config {
	var pairs []string
	for k, v := range env {
		pairs = append(pairs, k+"="+v)
	}
	cfg := &expand.Config{Env: expand.ListEnviron(pairs...), NoUnset: true}
	if glob {
		cfg.ReadDir2 = os.ReadDir
	}
	return cfg
}

// expand is one word of the example (a file name) as the shell reads it.
func (e example) expand(env map[string]string, w *syntax.Word) (string, error) {
	return expand.Literal(shell(env, false), w)
}

// words expands the example's arguments (after fsctl) and its VAR=value assignments as a shell
// would.
func (e example) words(env map[string]string, glob bool) (args []string, assigns map[string]string, err error) {
	cfg := shell(env, glob)
	assigns = map[string]string{}
	for _, a := range e.call.Assigns {
		if assigns[a.Name.Value], err = expand.Literal(cfg, a.Value); err != nil {
			return nil, nil, err
		}
	}
	fields, err := expand.Fields(cfg, e.call.Args...)
	if err != nil {
		return nil, nil, err
	}
	return fields[1:], assigns, nil
}

// parseExample checks args against the command they name as cobra would before running it: the
// command exists, every flag is known and its value good, the arguments and the required flags
// are there. What a command checks once it runs is TestEveryExampleRuns's.
func parseExample(root *cobra.Command, args []string) error {
	c, rest, err := root.Find(args)
	if err != nil {
		return err
	}
	c.InitDefaultHelpFlag()
	c.InitDefaultVersionFlag()
	if err := c.ParseFlags(rest); err != nil {
		return err
	}
	if err := c.ValidateArgs(c.Flags().Args()); err != nil {
		return err
	}
	if err := c.ValidateRequiredFlags(); err != nil {
		return err
	}
	return c.ValidateFlagGroups()
}

// exampleEnv stands in for the variables the Examples name, for the parse: any value will do.
var exampleEnv = map[string]string{"FSCTL_ADMIN_TOKEN": "ops-token", "OPS_TOKEN": "ops-token", "HOME": "/nonexistent"}

// TestEveryExampleParses: every fsctl line of every command's Example names a command that exists,
// with flags it has, good values and the arguments it takes, so --help never shows a command line
// that is refused as written (without the stack: TestEveryExampleRuns runs them).
func TestEveryExampleParses(t *testing.T) {
	all := examples(t, newRootCmd())
	if len(all) < 40 {
		t.Fatalf("found %d example lines: the walk misses some", len(all))
	}
	for _, e := range all {
		t.Run(exampleName(e), func(t *testing.T) {
			args, _, err := e.words(exampleEnv, false)
			if err != nil {
				t.Fatalf("%s: %v", e.line, err)
			}
			if err := parseExample(newRootCmd(), args); err != nil {
				t.Errorf("%s --help shows\n  %s\nwhich fsctl refuses: %v", e.owner.CommandPath(), e.line, err)
			}
		})
	}
}

// exampleName names a subtest by the example's line, cut short.
func exampleName(e example) string {
	name := e.line
	if len(name) > 90 {
		name = name[:90]
	}
	return fmt.Sprintf("%s/%s", strings.ReplaceAll(e.owner.CommandPath(), " ", "_"), name)
}
