package gameday

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fsctl/fsctl/internal/harness/stack"
)

// The fault tests share one private stack, on ports of their own, so they never touch the shared
// stack (16379/15432/19092) other packages' tests use at the same time, and a Kafka start (~15 s)
// is paid once per package run, not per test.
const (
	privRedisPort      = 26379
	privPostgresPort   = 25432
	privKafkaPort      = 29092
	privControllerPort = 29093
	// privClusterPort is the first node of the Redis Cluster a test adds to the private stack (its
	// buses from 31400, below the ephemeral ports).
	privClusterPort = 21400
)

var (
	privStackDir string
	fsctlBin     string
	buildOnce    sync.Once
	buildErr     error
)

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "fsctl-gameday-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	privStackDir = dir
	code := m.Run()
	// Down whatever the tests brought up; harmless when none did (-short).
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	if err := stack.Down(ctx, privateConfig()); err != nil {
		fmt.Fprintln(os.Stderr, "private stack down:", err)
	}
	cancel()
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

// privateConfig is the package's own stack; the Kafka jars are the shared stack's (read only).
func privateConfig() stack.Config {
	libs := filepath.Join("..", ".stack", "kafka", "libs")
	if d := os.Getenv(stack.EnvStackDir); d != "" {
		libs = filepath.Join(d, "kafka", "libs")
	}
	libs, _ = filepath.Abs(libs)
	return stack.Config{
		Dir: privStackDir, RedisPort: privRedisPort, PostgresPort: privPostgresPort,
		KafkaPort: privKafkaPort, KafkaControllerPort: privControllerPort, KafkaLibs: libs,
	}
}

// privateStack brings the private stack up (a no-op when it runs) and returns its config.
func privateStack(t *testing.T) stack.Config {
	t.Helper()
	if testing.Short() {
		t.Skip("needs its own Redis, PostgreSQL and Kafka (skipped with -short)")
	}
	cfg := privateConfig()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if err := stack.Up(ctx, cfg); err != nil {
		t.Fatalf("private stack up (Kafka jars from `make deps` expected in %s): %v", cfg.KafkaLibs, err)
	}
	return cfg
}

// fsctl builds the binary the fleet runs as `fsctl serve`, once per package run.
func fsctl(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		fsctlBin = filepath.Join(privStackDir, "fsctl")
		out, err := exec.Command("go", "build", "-o", fsctlBin, "../cmd/fsctl").CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("go build ../cmd/fsctl: %w\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return fsctlBin
}

// testScenario is a small sale that still cycles units: abandoned holds expire after 2s and are
// sold again while buyers keep arriving.
func testScenario(name string, steps ...Step) Scenario {
	return Scenario{
		Name: name, Seed: 7, Servers: 2, Buyers: 400, Rate: 100, Pay: 0.5, Cancel: 0.2, Retries: 3,
		Settle: 90 * time.Second,
		Sale:   SaleSpec{ID: "gd-" + name, HoldTTL: 2 * time.Second, PerUserLimit: 1, Items: []ItemSpec{{ID: "widget", Quantity: 40, Shards: 1}}},
		Steps:  steps,
	}
}

// lineWriter sends the run's progress to the test log.
type lineWriter struct{ t *testing.T }

func (w lineWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// play runs a scenario on the private stack (left running for the next test).
func play(t *testing.T, sc Scenario, opts ...func(*Config)) (*Report, error) {
	t.Helper()
	cfg := Config{
		Scenario: sc, Stack: privateStack(t), Teardown: TeardownNever, Fsctl: fsctl(t), WorkDir: workDir(t), Out: lineWriter{t},
	}
	for _, o := range opts {
		o(&cfg)
	}
	return Run(context.Background(), cfg)
}

// workDir holds a run's server logs; it is kept when the test fails, for the post-mortem.
func workDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "fsctl-gameday-run-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("server logs kept in %s", dir)
			return
		}
		_ = os.RemoveAll(dir)
	})
	return dir
}

// mustPass plays a scenario and fails the test with the report when anything did not hold.
func mustPass(t *testing.T, sc Scenario, opts ...func(*Config)) *Report {
	t.Helper()
	rep, err := play(t, sc, opts...)
	if rep != nil {
		var b strings.Builder
		_ = rep.Render(&b)
		t.Log("\n" + b.String())
	}
	if err != nil {
		t.Fatalf("game day: %v", err)
	}
	if !rep.Passed {
		t.Fatal("game day did not pass")
	}
	return rep
}
