package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fsctl/fsctl/internal/harness/testenv"
	"github.com/fsctl/fsctl/internal/harness/testenv/eventually"
	"github.com/fsctl/fsctl/profiles"
)

// Each example runs at most this long; one still running then (a server, a big burst, a game of
// minutes) is cancelled as Ctrl-C would, and must stop within exampleStop without another error.
const (
	exampleTime    = 15 * time.Second
	serverTime     = 5 * time.Second // serve and payments serve: they run until stopped
	exampleStop    = time.Minute
	sandboxAddress = "127.0.0.1:8080" // the address the examples give the local checkout
)

// remoteHost matches the hosts examples name that are not this machine.
var remoteHost = regexp.MustCompile(`shop\.example|10\.0\.0\.|//shop:|//cache:`)

// exampleParseOnly says why an example is not run but only parsed (TestEveryExampleParses), or "".
func exampleParseOnly(e example) string {
	switch path := e.owner.CommandPath(); {
	case path == "fsctl gameday":
		return "a game day brings a stack up, kills its processes and runs for minutes: the gameday package's tests, make gameday and make chaos run it"
	case remoteHost.MatchString(e.line):
		return "names hosts beyond this machine"
	case strings.Contains(e.line, "spring-article.yaml") && path != "fsctl profile tokens":
		return "needs the Spring-article shop running (examples/articleshop): scripts/drill.sh (make drill) runs these commands against it"
	case strings.Contains(e.line, "https://127.0.0.1:8443"):
		return "needs a checkout serving TLS on 8443: serve's TLS tests and blast's cover it"
	}
	return ""
}

// TestEveryExampleRuns runs every fsctl line of every command's Example in-process, as written,
// against a sandbox beside the local stack: a private Redis, a fresh PostgreSQL database, a Kafka
// broker of its own (the examples use the default topic and group names, which the game days and
// the drill use on the stack's broker), the sample sale created, and a checkout of the test's own
// at the address the examples give the local one (127.0.0.1:8080 maps to its free port;
// FSCTL_TARGET names it too). A server example listens on free ports instead of the ones it
// names. The files the examples read are made first (shard records, a capacity report,
// my-shop.yaml).
//
// An example passes when it ends 0, or 3 (it ran, and a check it makes failed on the sandbox's
// sale), or is still running when its time is up and then stops on the cancel with no usage
// error. Exit 2 always fails: the example is wrong as written. Then it replays the documents'
// samples (runDocSamples), with this fsctl built for their shell.
func TestEveryExampleRuns(t *testing.T) {
	root := newRootCmd()
	all, samples := examples(t, root), docSamples(t) // before the sandbox moves into its folder
	bin := buildFsctl(t)
	env, target := exampleSandbox(t)
	for i := 0; i < len(all); i++ {
		line := []example{all[i]}
		for all[i].background && i+1 < len(all) { // cmd & cmd: both run, side by side
			i++
			line = append(line, all[i])
		}
		t.Run(exampleName(line[0]), func(t *testing.T) {
			if why := exampleParseOnly(line[0]); why != "" {
				t.Skip("parse only: " + why)
			}
			ports := map[string]string{}
			runs := make([]exampleRun, len(line))
			for j, e := range line {
				runs[j] = prepareExample(t, e, env, target, ports)
			}
			var wg sync.WaitGroup
			for _, r := range runs {
				wg.Go(func() { r.run(t, env) })
			}
			wg.Wait()
		})
	}
	runDocSamples(t, samples, target, bin)
}

// exampleRun is an example ready to run: its words expanded, its addresses the sandbox's.
type exampleRun struct {
	example
	args  []string
	limit time.Duration
}

// prepareExample expands e, gives a server example free ports (ports maps the ones it names,
// shared by the commands of one line) and a client example the sandbox's checkout, and sets the
// variables the line assigns.
func prepareExample(t *testing.T, e example, env map[string]string, target string, ports map[string]string) exampleRun {
	t.Helper()
	args, assigns, err := e.words(env, true)
	if err != nil {
		t.Fatalf("%s: %v", e.line, err)
	}
	r := exampleRun{example: e, args: args, limit: exampleTime}
	if path := e.owner.CommandPath(); path == "fsctl serve" || path == "fsctl payments serve" {
		r.limit = serverTime
		r.args = freePorts(t, args, ports)
		if path == "fsctl payments serve" && !strings.Contains(e.line, "--addr") {
			r.args = append(r.args, "--addr", "127.0.0.1:"+freePort(t)) // its default is 127.0.0.1:8090
		}
	} else {
		for i, a := range args {
			r.args[i] = strings.ReplaceAll(a, sandboxAddress, target)
		}
	}
	for k, v := range assigns {
		t.Setenv(k, v)
	}
	return r
}

// run runs the example and judges how it ended; it may run beside another (no t.Fatal).
func (r exampleRun) run(t *testing.T, env map[string]string) {
	ctx, cancel := context.WithTimeout(context.Background(), r.limit)
	defer cancel()
	var out, errOut bytes.Buffer
	root := newRootCmd()
	root.SetOut(&out)
	root.SetErr(&errOut)
	root.SetArgs(r.args)
	done := make(chan struct{})
	var code int
	var err error
	var stillRunning bool
	go func() {
		defer close(done)
		code, err = execute(ctx, root)
		stillRunning = ctx.Err() != nil
	}()
	select {
	case <-done:
	case <-time.After(r.limit + exampleStop):
		t.Errorf("%s: still running %s after it was cancelled (Ctrl-C must stop it)", r.line, exampleStop)
		return
	}
	help := r.owner.CommandPath() + " --help shows\n  " + r.line
	switch {
	case code == exitUsage:
		t.Errorf("%s\nwhich exits 2: %v\n%s", help, err, errOut.String())
	case stillRunning:
		t.Logf("still running after %s, then stopped: %v", r.limit, err)
	case err != nil && code != exitCheck:
		t.Errorf("%s\nwhich fails (exit %d): %v\n%s", help, code, err, errOut.String())
	case r.pipe == "jq" && !json.Valid(out.Bytes()):
		t.Errorf("%s\npiped into jq, but its stdout is not JSON:\n%s", help, out.String())
	case code == exitCheck:
		t.Logf("exit 3, a check failed on the sandbox's sale: %v\n%s", err, out.String())
	}
	if len(r.shows) > 0 && !stillRunning {
		if missing := sampleMissing(r.shows, out.String()+errOut.String()); missing != "" {
			t.Errorf("%s\nshows the line\n  %s\nwhich the command no longer prints (figures aside); it printed:\n%s%s", help, missing, out.String(), errOut.String())
		}
	}
	if r.stdout == nil {
		return
	}
	if name, err := r.expand(env, r.stdout); err != nil {
		t.Error(err)
	} else if err := os.WriteFile(name, out.Bytes(), 0o644); err != nil {
		t.Error(err)
	}
}

// port matches the port of an address (":9091", "127.0.0.1:8080", "http://127.0.0.1:8090").
var port = regexp.MustCompile(`:(\d{4,5})\b`)

// freePorts gives each port a server example names (":9091", "127.0.0.1:8080") a free one, the
// same for the same port within ports.
func freePorts(t *testing.T, args []string, ports map[string]string) []string {
	t.Helper()
	out := make([]string, len(args))
	for i, a := range args {
		out[i] = port.ReplaceAllStringFunc(a, func(m string) string {
			p := m[1:]
			if ports[p] == "" {
				ports[p] = freePort(t)
			}
			return ":" + ports[p]
		})
	}
	return out
}

func freePort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	_, port, _ := net.SplitHostPort(l.Addr().String())
	return port
}

// exampleSandbox points every FSCTL_ variable at the sandbox, moves into a folder of its own
// (the examples write files: tokens.txt, report.html, gameday.jsonl) that sees the repository's
// examples/ and profiles/, and starts the checkout. It returns the variables the examples name
// and the checkout's host:port.
func exampleSandbox(t *testing.T) (map[string]string, string) {
	t.Helper()
	repo, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	// Its Redis persists as the local stack's does (stack/redis.go), so preflight's samples read as a
	// reader's.
	redisURL := testenv.PrivateRedisNode(t, "--appendonly", "yes", "--save", "3600 1 300 100 60 10000").URL
	postgresURL, brokers := testenv.Postgres(t), testenv.PrivateKafka(t)
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); strings.HasPrefix(k, "FSCTL_") {
			t.Setenv(k, "")
		}
	}
	dir := t.TempDir()
	for _, d := range []string{"examples", "profiles"} {
		if err := os.Symlink(filepath.Join(repo, d), filepath.Join(dir, d)); err != nil {
			t.Fatal(err)
		}
	}
	t.Chdir(dir)
	target := sandboxAddress // so a sample shows what a reader sees; another port where 8080 is taken
	if l, err := net.Listen("tcp", target); err != nil {
		target = "127.0.0.1:" + freePort(t)
	} else {
		l.Close()
	}
	env := map[string]string{"FSCTL_ADMIN_TOKEN": "examples-ops-token", "OPS_TOKEN": "examples-ops-token", "HOME": dir}
	for k, v := range map[string]string{
		"FSCTL_REDIS_URL": redisURL, "FSCTL_POSTGRES_URL": postgresURL, "FSCTL_KAFKA_BROKERS": strings.Join(brokers, ","),
		"FSCTL_STACK_DIR": filepath.Join(dir, ".stack"),
		"FSCTL_TARGET":    "http://" + target, "FSCTL_ADMIN_TOKEN": env["FSCTL_ADMIN_TOKEN"],
	} {
		t.Setenv(k, v)
	}
	mustRun(t, "sale", "create", "-f", "examples/sale.yaml")
	ctx, stop := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() {
		_, _, err := runCLIContext(ctx, "serve", "--addr", target)
		served <- err
	}()
	t.Cleanup(func() {
		stop()
		if err := <-served; err != nil {
			t.Errorf("the sandbox's checkout: %v", err)
		}
	})
	waitHealthy(t, "http://"+target+"/healthz", served)
	exampleFiles(t)
	return env, target
}

// exampleFiles makes what examples read: a profile of one's own, a burst's --output json report,
// and the --records of the four shards of one burst (also under out/).
func exampleFiles(t *testing.T) {
	t.Helper()
	prof, err := fs.ReadFile(profiles.Files, profiles.Bundled)
	if err == nil {
		err = os.WriteFile("my-shop.yaml", prof, 0o644)
	}
	if err != nil {
		t.Fatal(err)
	}
	report := mustRun(t, "blast", "--sale", "black-friday", "--item", "controller", "--buyers", "20", "-o", "json")
	if err := os.WriteFile("blast.json", []byte(report), 0o644); err != nil {
		t.Fatal(err)
	}
	at := time.Now().Add(10 * time.Second).UTC().Format(time.RFC3339Nano)
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Go(func() {
			_, _, err := runCLIContext(context.Background(), "blast", "--sale", "black-friday", "--item", "controller", "--buyers", "40", "--at", at,
				"--shard", fmt.Sprintf("%d/4", i), "--records", fmt.Sprintf("shard-%d.jsonl", i), "-o", "json")
			if err != nil {
				t.Errorf("shard %d: %v", i, err)
			}
		})
	}
	wg.Wait()
	if err := os.Mkdir("out", 0o755); err != nil {
		t.Fatal(err)
	}
	for i := range 4 {
		name := fmt.Sprintf("shard-%d.jsonl", i)
		if b, err := os.ReadFile(name); err != nil || os.WriteFile(filepath.Join("out", name), b, 0o644) != nil {
			t.Fatalf("%s: %v", name, err)
		}
	}
}

// runCLIContext is runCLI under ctx.
func runCLIContext(ctx context.Context, args ...string) (string, int, error) {
	var out, errOut bytes.Buffer
	root := newRootCmd()
	root.SetOut(&out)
	root.SetErr(&errOut)
	root.SetArgs(args)
	code, err := execute(ctx, root)
	if err != nil {
		err = fmt.Errorf("%w\n%s", err, errOut.String())
	}
	return out.String(), code, err
}

func mustRun(t *testing.T, args ...string) string {
	t.Helper()
	out, code, err := runCLIContext(context.Background(), args...)
	if err != nil {
		t.Fatalf("fsctl %s: exit %d: %v", strings.Join(args, " "), code, err)
	}
	return out
}

// waitHealthy waits until url answers 200, or the server gave up.
func waitHealthy(t *testing.T, url string, served <-chan error) {
	t.Helper()
	eventually.OK(t, time.Minute, func() error {
		if resp, err := http.Get(url); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case err := <-served:
			t.Fatalf("the sandbox's checkout stopped: %v", err)
		default:
		}
		return fmt.Errorf("the sandbox's checkout never answered %s", url)
	})
}
