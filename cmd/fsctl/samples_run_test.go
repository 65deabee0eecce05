package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"mvdan.cc/sh/v3/syntax"
)

// sampleTime is how long one sample's commands may run together; a command still running then
// (one started with &) is stopped.
const sampleTime = 2 * time.Minute

// buildFsctl builds this fsctl into a folder of its own and returns the folder, for the samples'
// shell to find on its PATH.
func buildFsctl(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	out, err := exec.Command("go", "build", "-o", filepath.Join(dir, "fsctl"), ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go build fsctl for the documents' samples: %v\n%s", err, out)
	}
	return dir
}

// runDocSamples replays the samples the documents mark (samples_test.go), each on the sample sale
// as it was created, beside the sandbox's checkout at target.
func runDocSamples(t *testing.T, samples []docSample, target, bin string) {
	for _, s := range samples {
		t.Run("doc/"+s.name(), func(t *testing.T) {
			mustRun(t, "sale", "create", "-f", "examples/sale.yaml", "--reset")
			s.replay(t, target, bin)
		})
	}
}

// stepMark opens and closes each command's output in the script's (stepMark i, stepMark i rc).
const stepMark = "@@fsctl-sample-step"

var stepLine = regexp.MustCompile("^" + stepMark + ` (\d+)(?: (\d+))?$`)

// replay runs the sample's commands in order as one bash script in the sandbox's folder (so a
// variable one sets is the next one's), with this fsctl first on the PATH, then holds each
// command's output to what the sample shows and its exit status to what a reader may meet: an
// fsctl command ends 0 or with a check's finding (3, 4), anything else ends 0.
func (s docSample) replay(t *testing.T, target, bin string) {
	script, err := s.script(target)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), sampleTime)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-c", script)
	home, err := os.Getwd() // the sandbox's folder, as the examples' HOME is
	if err != nil {
		t.Fatal(err)
	}
	cmd.Env = append(os.Environ(), "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"), "HOME="+home)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // its & commands are stopped with it
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 10 * time.Second
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err = cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("%s: still running after %s: %v\n%s", s.where, sampleTime, err, out.String())
	}
	if dir := os.Getenv("SAMPLES_OUT"); dir != "" { // make samples: the whole output, to trim into the document
		name := filepath.Join(dir, strings.NewReplacer("/", "_", ":", "_").Replace(s.where)+".txt")
		if err := os.WriteFile(name, out.Bytes(), 0o644); err != nil {
			t.Error(err)
		}
	}
	printed, codes := splitSteps(out.String())
	for i, st := range s.steps {
		code, ran := codes[i]
		fsctl := strings.HasPrefix(st.cmd, "fsctl ")
		switch {
		case !ran:
			t.Errorf("%s shows\n  $ %s\nwhich never ended; the script printed:\n%s", s.where, st.cmd, out.String())
		case fsctl && code != 0 && code != exitCheck && code != exitInvariant, !fsctl && code != 0:
			t.Errorf("%s shows\n  $ %s\nwhich exits %d:\n%s", s.where, st.cmd, code, printed[i])
		}
		if missing := sampleMissing(st.shows, printed[i]); missing != "" {
			t.Errorf("%s shows\n  $ %s\nprinting the line\n  %s\nwhich it no longer prints (figures aside); it printed:\n%s", s.where, st.cmd, missing, printed[i])
		}
	}
}

// script is the sample as bash runs it: each command between its marks, pointed at the sandbox's
// checkout (target) where it names the local one, and "fsctl serve" left out: the sandbox's
// checkout is the one it starts. A command the sample sends to the background (&) is stopped when
// the last one ends.
func (s docSample) script(target string) (string, error) {
	var b strings.Builder
	for i, st := range s.steps {
		cmd, err := withoutServe(st.cmd)
		if err != nil {
			return "", fmt.Errorf("%s: $ %s: %v", s.where, st.cmd, err)
		}
		cmd = strings.NewReplacer(sandboxAddress, target, "localhost:8080", target).Replace(cmd)
		// The closing mark starts a line even after output with no newline at its end (curl's).
		fmt.Fprintf(&b, "echo %s %d\n%s\nprintf '\\n%s %d %%d\\n' $?\n", stepMark, i, cmd, stepMark, i)
	}
	b.WriteString("kill $(jobs -p) 2>/dev/null; wait\n")
	return b.String(), nil
}

// withoutServe is a command with every "fsctl serve" in it made a no-op (and a list it ended
// sent to the background no longer sent there: its other commands are the sample's next step's
// setting).
func withoutServe(cmd string) (string, error) {
	f, err := syntax.NewParser().Parse(strings.NewReader(cmd), "")
	if err != nil {
		return "", err
	}
	served := false
	syntax.Walk(f, func(n syntax.Node) bool {
		if c, ok := n.(*syntax.CallExpr); ok && len(c.Args) > 1 && c.Args[0].Lit() == "fsctl" && c.Args[1].Lit() == "serve" {
			c.Args = c.Args[:1]
			c.Args[0] = &syntax.Word{Parts: []syntax.WordPart{&syntax.Lit{Value: "true"}}}
			served = true
		}
		return true
	})
	if !served {
		return cmd, nil
	}
	for _, st := range f.Stmts {
		st.Background = false
	}
	var b strings.Builder
	err = syntax.NewPrinter().Print(&b, f)
	return b.String(), err
}

// splitSteps is each command's output and exit status, by its index, from the script's output.
func splitSteps(out string) (map[int]string, map[int]int) {
	printed, codes := map[int]string{}, map[int]int{}
	current := -1
	for _, l := range strings.Split(out, "\n") {
		m := stepLine.FindStringSubmatch(l)
		switch {
		case m == nil && current >= 0:
			printed[current] += l + "\n"
		case m == nil:
		case m[2] == "":
			current, _ = strconv.Atoi(m[1])
		default:
			i, _ := strconv.Atoi(m[1])
			codes[i], _ = strconv.Atoi(m[2])
			current = -1
		}
	}
	return printed, codes
}

func TestSampleScript(t *testing.T) {
	s := docSample{where: "doc.md:3", steps: []sampleStep{
		{cmd: "fsctl sale create -f examples/sale.yaml && fsctl serve --addr 127.0.0.1:8080 &"},
		{cmd: "curl -s localhost:8080/readyz"},
		{cmd: "fsctl blast --sale black-friday \\\n    --buyers 5"},
	}}
	got, err := s.script("127.0.0.1:4321")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"fsctl sale create -f examples/sale.yaml && true\n", "curl -s 127.0.0.1:4321/readyz\n", "--buyers 5\n", "\\n" + stepMark + " 2 %d\\n' $?"} {
		if !strings.Contains(got, want) {
			t.Errorf("script lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "serve") || strings.Contains(got, "true &") {
		t.Errorf("the sample's fsctl serve is the sandbox's checkout, not run again:\n%s", got)
	}
	printed, codes := splitSteps(stepMark + " 0\nhello\n" + stepMark + " 0 0\n" + stepMark + " 1\nstray\n" + stepMark + " 1 4\n")
	if printed[0] != "hello\n" || printed[1] != "stray\n" || codes[0] != 0 || codes[1] != 4 {
		t.Errorf("split: %v %v", printed, codes)
	}
	if _, ok := codes[2]; ok {
		t.Errorf("a step that never ended has no status: %v", codes)
	}
}
