package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/fsctl/fsctl/internal/harness/stack"
)

// runCLIBoth runs fsctl with args in-process and returns its stdout and stderr apart.
func runCLIBoth(t *testing.T, args ...string) (stdout, stderr string, code int, err error) {
	t.Helper()
	var out, errOut bytes.Buffer
	root := newRootCmd()
	root.SetOut(&out)
	root.SetErr(&errOut)
	root.SetArgs(args)
	code, err = execute(context.Background(), root)
	return out.String(), errOut.String(), code, err
}

// loopbackPorts returns n loopback ports nothing listens on (at the moment of asking).
func loopbackPorts(t *testing.T, n int) []int {
	t.Helper()
	var ports []int
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports
}

// TestPrivateStackKnowsItsPorts starts a stack's Redis in a folder of its own on ports of its own,
// then reads the folder back the way a user does, naming only --dir: env, status and a later up
// must name that stack's Redis, never the default stack's, and an up on other ports is refused.
func TestPrivateStackKnowsItsPorts(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test; run without -short")
	}
	p := loopbackPorts(t, 4)
	dir := t.TempDir()
	cfg := stack.Config{Dir: dir, RedisPort: p[0], PostgresPort: p[1], KafkaPort: p[2], KafkaControllerPort: p[3]}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	pid, err := stack.Start(ctx, cfg, stack.Redis, false)
	if err != nil {
		t.Fatalf("start a private Redis (redis-server from `make deps`): %v", err)
	}
	t.Cleanup(func() { _ = stack.Stop(context.Background(), cfg, stack.Redis) })
	redisAddr := fmt.Sprintf("127.0.0.1:%d", p[0])

	out, _, code, err := runCLIBoth(t, "stack", "env", "--dir", dir)
	if err != nil {
		t.Fatalf("stack env: exit %d, %v", code, err)
	}
	for _, want := range []string{
		"export FSCTL_STACK_DIR=" + dir + "\n",
		"export FSCTL_REDIS_URL=redis://" + redisAddr + "/0\n",
		fmt.Sprintf("export FSCTL_POSTGRES_URL='postgres://fsctl@127.0.0.1:%d/fsctl?sslmode=disable'", p[1]),
		fmt.Sprintf("export FSCTL_KAFKA_BROKERS=127.0.0.1:%d\n", p[2]),
	} {
		if !strings.Contains(out, want) {
			t.Errorf("stack env --dir names another stack: no %q in\n%s", want, out)
		}
	}

	out, _, _, _ = runCLIBoth(t, "stack", "status", "--dir", dir, "-o", "json")
	var st struct {
		Services []serviceJSON `json:"services"`
	}
	if err := json.Unmarshal([]byte(out), &st); err != nil {
		t.Fatalf("stack status -o json: %v\n%s", err, out)
	}
	if len(st.Services) == 0 || st.Services[0].Name != "redis" || st.Services[0].Address != redisAddr || st.Services[0].PID != pid {
		t.Errorf("stack status --dir: %+v, want redis on %s with pid %d", st.Services, redisAddr, pid)
	}

	_, _, code, err = runCLIBoth(t, "stack", "up", "--dir", dir, "--redis-port", fmt.Sprint(p[0]+1))
	if code != exitUsage || err == nil || !strings.Contains(err.Error(), fmt.Sprintf("--redis-port %d, not %d", p[0], p[0]+1)) || !strings.Contains(err.Error(), "fsctl stack down --dir "+dir) {
		t.Errorf("stack up on other ports: exit %d, %v; want %d and the commands that move the stack", code, err, exitUsage)
	}
	if pid2, err := stack.PID(cfg, stack.Postgres); err == nil {
		t.Errorf("the refused up started PostgreSQL (pid %d)", pid2)
	}
}

// TestWipesNameTheirTargets: a command that deletes or rewrites a sale's data says first which
// Redis and PostgreSQL it is about to change (the addresses here lead nowhere, so nothing changes).
func TestWipesNameTheirTargets(t *testing.T) {
	redisURL, pgURL := "redis://127.0.0.1:1/0", "postgres://fsctl:pw-s3cr3t@127.0.0.1:2/fsctl?sslmode=disable&connect_timeout=1"
	services := []string{"--redis-url", redisURL, "--postgres-url", pgURL}
	for _, c := range []struct {
		name   string
		args   []string
		stderr bool // the line goes to stderr (progress) rather than stdout
	}{
		{"sale create --reset", []string{"sale", "create", "-f", "../../examples/sale.yaml", "--reset"}, false},
		{"sale create --reset -o json", []string{"sale", "create", "-f", "../../examples/sale.yaml", "--reset", "-o", "json"}, true},
		{"demo", []string{"demo", "-f", "../../examples/sale.yaml", "--kafka-brokers", "127.0.0.1:3"}, false},
		{"reconcile --rebuild-redis", []string{"reconcile", "--sale", "s", "--rebuild-redis", "--kafka-brokers", "127.0.0.1:3", "--timeout", "1s"}, true},
		{"preflight --fix", []string{"preflight", "--sale", "s", "--fix", "--kafka-brokers", "127.0.0.1:3"}, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			var out, errOut bytes.Buffer
			root := newRootCmd()
			root.SetOut(&out)
			root.SetErr(&errOut)
			root.SetArgs(append(c.args, services...))
			if _, err := execute(ctx, root); err == nil {
				t.Fatal("a command on unreachable services succeeded")
			}
			got := out.String()
			if c.stderr {
				got = errOut.String()
			}
			first, _, _ := strings.Cut(got, "\n")
			if !strings.Contains(first, "Redis "+redisURL) || !strings.Contains(first, "PostgreSQL postgres://fsctl:xxxxx@127.0.0.1:2/fsctl") {
				t.Errorf("first line %q does not name the Redis and PostgreSQL about to change", first)
			}
			if strings.Contains(out.String()+errOut.String(), "pw-s3cr3t") {
				t.Error("the password shows")
			}
		})
	}
}
