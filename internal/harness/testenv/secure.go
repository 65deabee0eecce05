package testenv

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fsctl/fsctl/internal/harness/stack"
)

// EnvSecureStackDir names the folder of the secure stack the tests of secured services use
// (`make test` starts it with `fsctl stack up --secure`); by default the .stack-secure folder of
// the nearest directory above the test's that has one.
const EnvSecureStackDir = "FSCTL_SECURE_STACK_DIR"

// SecureStack is the running secure stack (TLS only, a password for every client): its resolved
// config, for the stack's secrets, and its endpoints with the credentials a client needs. It
// fails the test, saying how to start it, when the stack is not there or not running.
func SecureStack(tb testing.TB) (stack.Config, stack.Endpoints) {
	tb.Helper()
	skipShort(tb)
	dir := os.Getenv(EnvSecureStackDir)
	if dir == "" {
		dir = nearest(stack.DefaultSecureDir)
	}
	cfg, err := stack.Resolve(stack.Config{Dir: dir})
	if err != nil {
		tb.Fatalf("secure stack in %s: %v", dir, err)
	}
	if !cfg.Secure {
		tb.Fatalf("no secure stack in %s: start one with `fsctl stack up --secure` (make test does), or set %s", dir, EnvSecureStackDir)
	}
	statuses, err := stack.Status(tb.Context(), cfg)
	if err != nil {
		tb.Fatal(err)
	}
	for _, s := range statuses {
		if !s.Running {
			tb.Fatalf("the secure stack's %s is not running: start it with `fsctl stack up --dir %s`", s.Name, dir)
		}
	}
	return cfg, cfg.Endpoints()
}

// UseSecureStack is SecureStack with the process's environment pointed at it as the eval of
// `fsctl stack env --dir` points a shell: its addresses and every login variable, set with
// t.Setenv (so undone when the test ends, and the test may not be parallel).
func UseSecureStack(t *testing.T) (stack.Config, stack.Endpoints) {
	t.Helper()
	cfg, e := SecureStack(t)
	vars, err := e.Credentials.Variables(stack.ReadPassword)
	if err != nil {
		t.Fatal(err)
	}
	vars = append(vars, [2]string{stack.EnvRedisURL, e.RedisURL}, [2]string{stack.EnvPostgresURL, e.PostgresURL},
		[2]string{stack.EnvKafkaBrokers, strings.Join(e.KafkaBrokers, ",")})
	for _, v := range vars {
		t.Setenv(v[0], v[1])
	}
	return cfg, e
}

// nearest is the folder name in the nearest directory above the working one that has it (the
// repository root's, for a test run in a package), else name as it is.
func nearest(name string) string {
	dir, _ := os.Getwd()
	for {
		p := filepath.Join(dir, name)
		if _, err := os.Stat(p); err == nil {
			return p
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return name
		}
		dir = parent
	}
}
