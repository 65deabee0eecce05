package main

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// The fsctl commands the documents name are checked against the command tree, so a runbook, an
// alert annotation or a doc never tells a reader to run a command or flag that does not exist.
//
// Where a command is found:
//   - Markdown (every *.md of the repository but hidden folders and testdata): inside code spans
//     (`…`, which may wrap onto the next line of their paragraph) and fenced code blocks (``` or
//     ~~~), where a line ending in \ continues on the next. Prose outside code is not read: it
//     says "an fsctl instance" as often as it names a command.
//   - The Prometheus files (deploy/prometheus/*.yaml): code spans on any line, comments and
//     annotations alike; and a rule's runbook annotation must put every fsctl command it names
//     in backticks, so a runbook cannot slip past in prose: there the word fsctl anywhere starts
//     one ("run fsctl reconcile." is a finding, and is checked too).
//
// In a code block whose commands carry a "$ " prompt, the other lines are output and not read;
// a block in another language than the shell's (```yaml, ```go, ...) is not read either.
//
// What is a command: a word "fsctl" (or ./fsctl, bin/fsctl, ./bin/fsctl, /any/path/fsctl) where
// the shell would run it: first on the line, or after $(, |, ;, &, a backtick, NAME=value, sudo,
// do, ... (commandPosition), and not in a # comment. The words after it are split as a shell
// would (quotes and $( … ) kept together) up to a pipe, ;, &, ), a redirection, a comment or the
// end; {{ … }} templates become one word, [ ] around an optional word are dropped, and an
// elision (... or …) is no word, nor is a usage line's [flags] or [command]. "fsctl" followed by a word that is not a command, as in prose
// inside a span ("`fsctl instances`"), is a finding: write such prose outside code.
//
// What is checked: the subcommand path exists; every --flag and -x it names exists on that
// command (its own or inherited, --help and --version included) and is not deprecated (a
// document teaches the current name; the deprecated alias is for scripts, for one release); and
// the positional words left over are ones the command accepts (its Args), so "fsctl admin pause"
// is unknown command "admin". Flag values are not parsed: documents write placeholders there.
type docCommand struct {
	where string   // file:line
	text  string   // the command as written, from fsctl on
	words []string // the words after fsctl
}

var (
	// fsctlWord finds the program: a whole word, optionally behind a path.
	fsctlWord = regexp.MustCompile(`(?:^|[^\w./-])((?:\./|(?:\./)?bin/|/(?:[\w.-]+/)+)?fsctl)(?:[ \t]+|$)`)
	// codeSpan is a code span of one or more backticks; its text may wrap onto the next line.
	codeSpan = regexp.MustCompile("(`+)([^`]+?)`+")
	// templateAction is a Go template action of an alert annotation ({{ $labels.sale }}).
	templateAction = regexp.MustCompile(`\{\{.*?\}\}`)
	// fence opens or closes a fenced code block; its info string names the language.
	fence = regexp.MustCompile("^\\s*(```|~~~)\\s*(\\S*)")
	// promptLine is a command line of a block that shows commands and their output.
	promptLine = regexp.MustCompile(`^\s*\$ (.*)`)
	// shellInfo are the info strings of a code block of commands (none is one too).
	shellInfo = map[string]bool{"": true, "sh": true, "bash": true, "shell": true, "console": true, "text": true}
)

// blockHasPrompts reports whether the code block starting at lines (up to its closing fence)
// marks its commands with "$ ": then its other lines are output.
func blockHasPrompts(lines []string, fenceMark string) bool {
	for _, l := range lines {
		if f := fence.FindStringSubmatch(l); f != nil && f[1] == fenceMark {
			return false
		}
		if promptLine.MatchString(l) {
			return true
		}
	}
	return false
}

// commandsIn returns every fsctl command in code, a code span's text or a code block's line.
func commandsIn(where, code string) []docCommand { return findCommands(where, code, false) }

// proseCommands returns every fsctl command that prose names, wherever it stands ("run fsctl
// reconcile."): a sentence's punctuation ends a word.
func proseCommands(where, prose string) []docCommand { return findCommands(where, prose, true) }

// findCommands finds the commands in text; in prose, the word fsctl anywhere starts one.
func findCommands(where, code string, prose bool) []docCommand {
	code = templateAction.ReplaceAllString(code, "TEMPLATE")
	code = strings.ReplaceAll(code, `\|`, "|") // a pipe escaped in a Markdown table
	var out []docCommand
	for _, m := range fsctlWord.FindAllStringSubmatchIndex(code, -1) {
		if !prose && (!commandPosition(code[:m[2]]) || inComment(code[:m[2]])) {
			continue
		}
		rest := code[m[1]:]
		words, end := shellWords(rest)
		words = slices.DeleteFunc(words, func(w string) bool { return w == "..." || w == "…" })
		if prose {
			for i, w := range words {
				words[i] = strings.TrimRight(w, ".,:")
			}
		}
		out = append(out, docCommand{where: where, text: strings.TrimSpace(code[m[2]:m[1]] + rest[:end]), words: words})
	}
	return out
}

// commandPosition reports whether a word after before is a command the shell runs: the first
// word, or one after a separator or a word that runs the next ($(, |, ;, &, do, sudo, NAME=value,
// ...). So "go build -o bin/fsctl" and "through profile fsctl (order by order)" are not commands.
func commandPosition(before string) bool {
	before = strings.TrimRight(before, " \t")
	if before == "" || strings.ContainsAny(before[len(before)-1:], "(|;&`{") {
		return true
	}
	words := strings.Fields(before)
	last := words[len(words)-1]
	return runsNext[last] || envAssignment.MatchString(last)
}

var (
	// runsNext are the words after which the shell runs the next word as a command.
	runsNext = map[string]bool{"$": true, "do": true, "then": true, "else": true, "time": true, "exec": true,
		"sudo": true, "env": true, "xargs": true, "watch": true, "nohup": true, "!": true}
	// envAssignment is NAME=value before a command.
	envAssignment = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*=`)
)

// inComment reports whether a shell comment is open at the end of s: a # starting a word,
// outside quotes.
func inComment(s string) bool {
	quote, prev := rune(0), ' '
	for _, r := range s {
		switch {
		case quote != 0 && r == quote:
			quote = 0
		case quote != 0:
		case r == '"' || r == '\'':
			quote = r
		case r == '#' && (prev == ' ' || prev == '\t'):
			return true
		}
		prev = r
	}
	return false
}

// shellWords splits s into words as a shell would, quotes kept together, up to the first
// unquoted separator (| ; & ) < > or a # starting a word, or a backtick); end is where it stopped.
func shellWords(s string) (words []string, end int) {
	var w strings.Builder
	inWord, quote, depth := false, rune(0), 0 // depth: inside $( … ) within a word
	flush := func() {
		if inWord {
			word := strings.Trim(w.String(), "[]")
			if w.String() == "[flags]" || w.String() == "[command]" {
				word = "…" // cobra's usage line (fsctl demo [flags]): a placeholder, as an elision is
			}
			words = append(words, word)
		}
		w.Reset()
		inWord = false
	}
	for i, r := range s {
		switch {
		case quote != 0 && r == quote:
			quote = 0
		case quote != 0:
			w.WriteRune(r)
		case r == '"' || r == '\'':
			quote, inWord = r, true
		case r == '(' && strings.HasSuffix(w.String(), "$"):
			w.WriteRune(r)
			depth++
		case r == ')' && depth > 0:
			w.WriteRune(r)
			depth--
		case depth > 0:
			w.WriteRune(r)
		case r == ' ' || r == '\t' || r == '\n':
			flush()
		case strings.ContainsRune("|;&)<>`", r) || (r == '#' && !inWord):
			flush()
			return words, i
		default:
			w.WriteRune(r)
			inWord = true
		}
	}
	flush()
	return words, len(s)
}

// markdownCommands returns the commands in the code spans and code blocks of a Markdown file.
func markdownCommands(name, text string) []docCommand {
	var out []docCommand
	lines := strings.Split(text, "\n")
	var para []string // the prose paragraph being gathered, for spans that wrap
	paraStart := 0
	endPara := func() {
		p := strings.Join(para, "\n")
		for _, m := range codeSpan.FindAllStringSubmatchIndex(p, -1) {
			line := paraStart + strings.Count(p[:m[0]], "\n")
			out = append(out, commandsIn(fmt.Sprintf("%s:%d", name, line), strings.ReplaceAll(p[m[4]:m[5]], "\n", " "))...)
		}
		para = nil
	}
	inBlock, prompts, cont, contStart := "", false, "", 0
	for i, line := range lines {
		n := i + 1
		if f := fence.FindStringSubmatch(line); f != nil && (inBlock == "" || f[1] == inBlock) {
			endPara()
			if inBlock == "" {
				inBlock, prompts = f[1], blockHasPrompts(lines[i+1:], f[1])
				if !shellInfo[strings.TrimSpace(f[2])] {
					inBlock = "skip" + f[1]
				}
			} else {
				inBlock = ""
			}
			continue
		}
		if strings.HasPrefix(inBlock, "skip") {
			if f := fence.FindStringSubmatch(line); f != nil && "skip"+f[1] == inBlock {
				inBlock = ""
			}
			continue
		}
		if inBlock != "" {
			if cont == "" {
				contStart = n
				if prompt := promptLine.FindStringSubmatch(line); prompt != nil {
					line = prompt[1]
				} else if prompts {
					continue // output
				}
			}
			if l, ok := strings.CutSuffix(strings.TrimRight(line, " "), `\`); ok {
				cont += l + " "
				continue
			}
			out = append(out, commandsIn(fmt.Sprintf("%s:%d", name, contStart), cont+line)...)
			cont = ""
			continue
		}
		if strings.TrimSpace(line) == "" {
			endPara()
			continue
		}
		if para == nil {
			paraStart = n
		}
		para = append(para, line)
	}
	endPara()
	return out
}

// rulesCommands returns the commands in the code spans of a Prometheus file's lines, and a problem
// for each runbook annotation that names an fsctl command outside backticks (returned too).
func rulesCommands(name, text string) ([]docCommand, []string) {
	var out []docCommand
	for i, line := range strings.Split(text, "\n") {
		for _, m := range codeSpan.FindAllStringSubmatch(line, -1) {
			out = append(out, commandsIn(fmt.Sprintf("%s:%d", name, i+1), m[2])...)
		}
	}
	var file struct {
		Groups []struct {
			Rules []struct {
				Alert       string            `yaml:"alert"`
				Annotations map[string]string `yaml:"annotations"`
			} `yaml:"rules"`
		} `yaml:"groups"`
	}
	if err := yaml.Unmarshal([]byte(text), &file); err != nil {
		return out, []string{fmt.Sprintf("%s: %v", name, err)}
	}
	var problems []string
	for _, g := range file.Groups {
		for _, r := range g.Rules {
			prose := codeSpan.ReplaceAllString(r.Annotations["runbook"], "")
			for _, c := range proseCommands(name+": "+r.Alert+"'s runbook", prose) {
				problems = append(problems, fmt.Sprintf("%s: %s's runbook names %q outside backticks; write the command as `fsctl …`", name, r.Alert, c.text))
				out = append(out, c) // and checked like any other
			}
		}
	}
	return out, problems
}

// documentedCommands reads every document of the repository at root and returns the commands
// they name, with the problems found on the way.
func documentedCommands(t *testing.T, root string) ([]docCommand, []string) {
	t.Helper()
	var cmds []docCommand
	var problems []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != root && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" || d.Name() == "target" || d.Name() == "node_modules") {
			return filepath.SkipDir
		}
		rel, _ := filepath.Rel(root, path)
		isRules := filepath.Dir(rel) == filepath.Join("deploy", "prometheus") && strings.HasSuffix(rel, ".yaml")
		if d.IsDir() || (!isRules && !strings.HasSuffix(rel, ".md")) {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if isRules {
			c, p := rulesCommands(rel, string(b))
			cmds, problems = append(cmds, c...), append(problems, p...)
		} else {
			cmds = append(cmds, markdownCommands(rel, string(b))...)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return cmds, problems
}

// TestDocumentedCommandsExist checks every fsctl command the documents name against the command
// tree (the rule is at docCommand).
func TestDocumentedCommandsExist(t *testing.T) {
	cmds, problems := documentedCommands(t, "../..")
	for _, p := range problems {
		t.Error(p)
	}
	root := fullTree()
	files := map[string]int{}
	for _, c := range cmds {
		files[strings.Split(c.where, ":")[0]]++
		if err := checkCommand(root, c.words); err != nil {
			t.Errorf("%s: `%s`: %v", c.where, c.text, err)
		}
	}
	// the walk must reach the documents the rule is for, or this test checks nothing
	for _, f := range []string{"README.md", "docs/warroom.md", "deploy/README.md", "deploy/prometheus/fsctl-alerts.yaml"} {
		if files[filepath.FromSlash(f)] == 0 {
			t.Errorf("no fsctl command found in %s", f)
		}
	}
	if len(cmds) < 200 {
		t.Errorf("%d commands found in the documents; the extraction lost most of them", len(cmds))
	}
}

// TestDocumentCommandExtraction pins the extraction rule on small documents: what is a command,
// what is output, prose or another program's argument.
func TestDocumentCommandExtraction(t *testing.T) {
	md := "Run `fsctl sale show\n--sale x` first.\n\n" +
		"```sh\n$ FSCTL_X=1 bin/fsctl blast --sale 's 1' \\\n    --item i | tee out\nfsctl admin output line\n$ eval \"$(fsctl stack env)\"\n```\n\n" +
		"```yaml\nrun: fsctl admin   # another language\n```\n\n" +
		"```\ngo build -o bin/fsctl ./cmd/fsctl\nfsctl gameday --chaos [--seed N] # not fsctl admin\nfsctl blast --at $(date -d +1min) ...\n```\n\n" +
		"```\nfsctl sale create -f SALE.yaml [flags]\nfsctl sale [command]\n```\n"
	var got []string
	for _, c := range markdownCommands("x.md", md) {
		got = append(got, c.where+" "+strings.Join(c.words, " "))
	}
	want := []string{"x.md:1 sale show --sale x", "x.md:5 blast --sale s 1 --item i", "x.md:8 stack env",
		"x.md:17 gameday --chaos --seed N", "x.md:18 blast --at $(date -d +1min)",
		"x.md:22 sale create -f SALE.yaml", "x.md:23 sale"}
	if !slices.Equal(got, want) {
		t.Errorf("markdown commands\n got %q\nwant %q", got, want)
	}

	rules := "# `fsctl reconcile --sale S` in a comment\ngroups:\n  - name: g\n    rules:\n      - alert: A\n        annotations:\n" +
		"          summary: fsctl instances {{ $labels.instance }} down\n" +
		"          runbook: Pause it (fsctl admin pause), then `fsctl sale resume --sale {{ $labels.sale }}` and run fsctl reconcile.\n"
	cmds, problems := rulesCommands("r.yaml", rules)
	got = nil
	for _, c := range cmds {
		got = append(got, strings.Join(c.words, " "))
	}
	if want := []string{"reconcile --sale S", "sale resume --sale TEMPLATE", "admin pause", "reconcile"}; !slices.Equal(got, want) {
		t.Errorf("rule commands\n got %q\nwant %q", got, want)
	}
	if len(problems) != 2 || !strings.Contains(problems[0], `"fsctl admin pause"`) || !strings.Contains(problems[1], `"fsctl reconcile."`) {
		t.Errorf("problems %q, want the runbook's two prose commands", problems)
	}
}
