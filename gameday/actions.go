package gameday

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"time"

	"gopkg.in/yaml.v3"
)

// The steps that act on a team's own system rather than on the processes fsctl started: a
// command (kubectl delete pod, a managed Redis's failover, systemctl restart) and a request (the
// shop's own pause or kill switch). A failed or timed-out one is recorded and the run goes on;
// the verdict names it.

// execStep runs a command at the step's moment.
type execStep struct {
	// Argv is the command and its arguments; Shell, when set instead, is a line for sh -c.
	Argv  []string
	Shell string
	// Timeout bounds the command (its process group is killed at the end); Expect is the exit
	// status that counts as done.
	Timeout time.Duration
	Expect  int
}

// lastLines is how many lines of a command's output the timeline keeps.
const lastLines = 5

func (execStep) Name() string { return "exec" }

func (s execStep) Describe() string {
	return fmt.Sprintf("run `%s` (timeout %s)", s.line(), s.Timeout)
}

func (s execStep) line() string {
	if s.Shell != "" {
		return s.Shell
	}
	return strings.Join(s.Argv, " ")
}

// program is the file the step runs: sh for a shell line.
func (s execStep) program() string {
	if s.Shell != "" {
		return "sh"
	}
	return s.Argv[0]
}

// Check finds the program before any load: a typo must not cost a sale's worth of traffic. A
// shell line is checked for sh and for its first word when that is a plain command name.
func (s execStep) Check() error {
	names := []string{s.program()}
	if f := strings.Fields(s.Shell); len(f) > 0 && !strings.ContainsAny(f[0], "=$`'\"(){}<>|&;") {
		names = append(names, f[0])
	}
	for _, n := range names {
		if _, err := exec.LookPath(n); err != nil && !isShellWord(n) {
			return fmt.Errorf("exec `%s`: %s not found on PATH", s.line(), n)
		}
	}
	return nil
}

// isShellWord is a builtin sh runs without a program of its name.
func isShellWord(w string) bool {
	return slices.Contains([]string{"cd", "echo", "exit", "export", "kill", "sleep", "test", "true", "false", "[", ".", "exec", "wait"}, w)
}

func (s execStep) Apply(ctx context.Context, env *Env) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, s.Timeout)
	defer cancel()
	var cmd *exec.Cmd
	if s.Shell != "" {
		cmd = exec.CommandContext(ctx, "sh", "-c", s.Shell)
	} else {
		cmd = exec.CommandContext(ctx, s.Argv[0], s.Argv[1:]...)
	}
	// Its own process group, killed whole at the timeout: kubectl's or a script's children too.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 2 * time.Second
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	begin := time.Now()
	err := cmd.Run()
	took := time.Since(begin).Round(10 * time.Millisecond)
	tail := tailLines(out.String(), lastLines)
	code := cmd.ProcessState.ExitCode()
	env.Note("exec `%s`: exit %d in %s%s", s.line(), code, took, indent(tail))
	switch {
	case ctx.Err() == context.DeadlineExceeded:
		return "", fmt.Errorf("exec `%s` timed out after %s and was killed%s", s.line(), s.Timeout, lastSaid(tail))
	case err != nil && code < 0:
		return "", fmt.Errorf("exec `%s`: %w", s.line(), err)
	case code != s.Expect:
		return "", fmt.Errorf("exec `%s` exited %d, want %d%s", s.line(), code, s.Expect, lastSaid(tail))
	}
	return fmt.Sprintf("`%s` exited %d in %s%s", s.line(), code, took, lastSaid(tail)), nil
}

// tailLines is the last n non-empty lines of out.
func tailLines(out string, n int) []string {
	var lines []string
	for l := range strings.SplitSeq(out, "\n") {
		if l = strings.TrimRight(l, "\r "); l != "" {
			lines = append(lines, l)
		}
	}
	return lines[max(0, len(lines)-n):]
}

func indent(lines []string) string {
	if len(lines) == 0 {
		return ""
	}
	return "\n    " + strings.Join(lines, "\n    ")
}

func lastSaid(lines []string) string {
	if len(lines) == 0 {
		return ""
	}
	return "; it said: " + strings.Join(lines, " | ")
}

// httpStep sends one request, such as the shop's own pause switch, and wants one status.
type httpStep struct {
	Method, URL, Body string
	Headers           map[string]string
	// Expect is the status wanted; 0 is any 2xx.
	Expect  int
	Timeout time.Duration
}

func (httpStep) Name() string { return "http" }

func (s httpStep) Describe() string { return fmt.Sprintf("%s %s, want %s", s.Method, s.URL, s.want()) }

// want is the status the step wants, in words.
func (s httpStep) want() string {
	if s.Expect == 0 {
		return "a 2xx"
	}
	return fmt.Sprint(s.Expect)
}

// Check is the URL's form, its ${VARIABLES} set: the request is not sent.
func (s httpStep) Check() error {
	_, err := s.request(context.Background())
	return err
}

// request is the step's request, ${VARIABLE}s expanded from the environment, so a token lives
// in the environment and never in the scenario; one that is unset is an error naming it.
func (s httpStep) request(ctx context.Context) (*http.Request, error) {
	var missing []string
	expand := func(v string) string {
		return os.Expand(v, func(k string) string {
			val, ok := os.LookupEnv(k)
			if !ok {
				missing = append(missing, k)
			}
			return val
		})
	}
	raw, body := expand(s.URL), expand(s.Body)
	headers := map[string]string{}
	for k, v := range s.Headers {
		headers[k] = expand(v)
	}
	if len(missing) > 0 {
		slices.Sort(missing)
		return nil, fmt.Errorf("http %s %s: %s not set", s.Method, s.URL, strings.Join(slices.Compact(missing), ", "))
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("http %s: want an http:// or https:// URL", s.URL)
	}
	req, err := http.NewRequestWithContext(ctx, s.Method, raw, strings.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("http %s %s: %w", s.Method, s.URL, err)
	}
	for _, k := range slices.Sorted(maps.Keys(headers)) {
		req.Header.Set(k, headers[k])
	}
	return req, nil
}

func (s httpStep) Apply(ctx context.Context, env *Env) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, s.Timeout)
	defer cancel()
	req, err := s.request(ctx)
	if err != nil {
		return "", err
	}
	begin := time.Now()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		// The URL as written: an expanded one may hold a token.
		return "", fmt.Errorf("http %s %s: %w", s.Method, s.URL, errors.Unwrap(err))
	}
	defer resp.Body.Close()
	snippet, _ := io.ReadAll(io.LimitReader(resp.Body, 200))
	took := time.Since(begin).Round(time.Millisecond)
	env.Note("http %s %s: %d in %s", s.Method, s.URL, resp.StatusCode, took)
	ok := resp.StatusCode == s.Expect || s.Expect == 0 && resp.StatusCode/100 == 2
	if !ok {
		return "", fmt.Errorf("http %s %s answered %d, want %s: %s", s.Method, s.URL, resp.StatusCode, s.want(),
			strings.Join(strings.Fields(string(snippet)), " "))
	}
	return fmt.Sprintf("%s %s answered %d in %s", s.Method, s.URL, resp.StatusCode, took), nil
}

// parseExec reads an exec step: command is a list (the program and its arguments, no shell) or
// one line for sh -c.
func parseExec(m fields, p *parser) (Fault, error) {
	s := execStep{Timeout: 30 * time.Second}
	n := m.get("command")
	switch {
	case n == nil:
		return nil, lineErr(m.node, "exec: say the command (a list, [kubectl, delete, pod, ...], or a line for sh -c)")
	case n.Kind == yaml.ScalarNode && strings.TrimSpace(n.Value) != "":
		s.Shell = n.Value
	case n.Kind == yaml.SequenceNode && len(n.Content) > 0:
		for _, a := range n.Content {
			if a.Kind != yaml.ScalarNode {
				p.fail(m, "command", a, errors.New("want each argument a single value"))
				return nil, p.err
			}
			s.Argv = append(s.Argv, a.Value)
		}
	default:
		p.fail(m, "command", n, errors.New("want a command: a list of its words, or a line for sh -c"))
	}
	p.dur(m, "timeout", &s.Timeout)
	p.int(m, "expect", &s.Expect, 0, 255)
	if p.err == nil && s.Timeout <= 0 {
		return nil, lineErr(m.node, "exec: timeout must be positive")
	}
	return s, nil
}

// parseHTTP reads an http step.
func parseHTTP(m fields, p *parser) (Fault, error) {
	s := httpStep{Method: "POST", Timeout: 10 * time.Second, Headers: map[string]string{}}
	p.str(m, "method", &s.Method)
	p.str(m, "url", &s.URL)
	p.str(m, "body", &s.Body)
	p.int(m, "expect", &s.Expect, 0, 599)
	p.dur(m, "timeout", &s.Timeout)
	p.mapOf(m, "headers", "header names to values", func(sub fields, name string) {
		var v string
		p.str(sub, name, &v)
		s.Headers[name] = v
	})
	if p.err != nil {
		return nil, p.err
	}
	s.Method = strings.ToUpper(s.Method)
	if s.URL == "" {
		return nil, lineErr(m.node, "http: say the url (http(s)://...; ${VARIABLES} come from the environment)")
	}
	// A URL from the environment is checked once expanded (Check, before any load).
	if u, err := url.Parse(s.URL); !strings.HasPrefix(s.URL, "$") && (err != nil || !strings.HasPrefix(s.URL, "http://") && !strings.HasPrefix(s.URL, "https://") || u.Host == "") {
		return nil, lineErr(m.node, "http: url %q: want http:// or https://", s.URL)
	}
	if s.Timeout <= 0 {
		return nil, lineErr(m.node, "http: timeout must be positive")
	}
	return s, nil
}
