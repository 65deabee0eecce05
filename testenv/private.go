package testenv

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/fsctl/fsctl/stack"
)

// PrivateRedis starts a redis-server of the test's own on a free loopback port, with no
// persistence, and returns its URL; it is killed when the test ends. For tests that change what
// every client of a server shares (its script cache, its configuration) without disturbing the
// other tests of the stack.
func PrivateRedis(tb testing.TB) string {
	tb.Helper()
	skipShort(tb)
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		tb.Fatalf("redis-server not found on PATH: run `make deps` (apt-get install redis-server)")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	_ = ln.Close()
	cmd := exec.Command(bin, "--port", fmt.Sprint(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
		"--dir", tb.TempDir())
	if err := cmd.Start(); err != nil {
		tb.Fatalf("start redis-server: %v", err)
	}
	tb.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	url := fmt.Sprintf("redis://127.0.0.1:%d/0", port)
	c := redis.NewClient(&redis.Options{Addr: fmt.Sprintf("127.0.0.1:%d", port)})
	defer c.Close()
	deadline := time.Now().Add(10 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		err := c.Ping(ctx).Err()
		cancel()
		if err == nil {
			return url
		}
		if time.Now().After(deadline) {
			tb.Fatalf("private redis-server on port %d never answered: %v", port, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// PrivateKafkaCluster starts a replicated Kafka of the test's own: three KRaft brokers on
// port..port+2 (controllers on port+100..), in a temporary folder, with the Kafka jars of the shared
// stack ($FSCTL_STACK_DIR, else the repository's .stack). It returns the config that names it (for
// stack.KillKafkaBroker and StartKafkaBroker) and its brokers, and stops it when the test ends. For
// tests that kill brokers, which must not disturb the tests sharing the stack's own cluster.
func PrivateKafkaCluster(tb testing.TB, port int) (stack.Config, []string) {
	tb.Helper()
	skipShort(tb)
	cfg := stack.Config{Dir: tb.TempDir(), KafkaLibs: sharedKafkaLibs(), KafkaCluster: stack.KafkaLayout{Brokers: 3, Port: port}}
	private(tb, cfg, stack.KafkaCluster, 3*time.Minute, "jars from `make deps` expected in "+cfg.KafkaLibs)
	return cfg, cfg.KafkaCluster.Addrs()
}

// sharedKafkaLibs is the shared stack's Kafka jar folder: under $FSCTL_STACK_DIR, else under the
// .stack folder of the nearest directory above the test's that has one.
func sharedKafkaLibs() string {
	if d := os.Getenv(stack.EnvStackDir); d != "" {
		abs, _ := filepath.Abs(filepath.Join(d, "kafka", "libs"))
		return abs
	}
	dir, _ := os.Getwd()
	for {
		libs := filepath.Join(dir, ".stack", "kafka", "libs")
		if _, err := os.Stat(libs); err == nil {
			return libs
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return filepath.Join(".stack", "kafka", "libs")
		}
		dir = parent
	}
}

// PrivateRedisCluster starts a Redis Cluster of the test's own: masters masters with replicas
// replicas each, node i on port+i (its bus on port+i+10000), in a temporary folder, stopped when
// the test ends. It returns the config that names it (for stack.KillClusterNode and
// StartClusterNode) and its redis+cluster:// address. For tests that kill nodes.
func PrivateRedisCluster(tb testing.TB, masters, replicas, port int) (stack.Config, string) {
	tb.Helper()
	skipShort(tb)
	l := stack.ClusterLayout{Masters: masters, Replicas: replicas, Port: port}
	cfg := stack.Config{Dir: tb.TempDir(), RedisCluster: l}
	private(tb, cfg, stack.RedisCluster, 2*time.Minute, "redis-server from `make deps`")
	return cfg, l.URL()
}

// private starts one cluster service of cfg within limit and stops it when the test ends.
func private(tb testing.TB, cfg stack.Config, service string, limit time.Duration, needs string) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		_ = stack.Stop(ctx, cfg, service)
	})
	if _, err := stack.Start(ctx, cfg, service, false); err != nil {
		tb.Fatalf("private %s (%s): %v", service, needs, err)
	}
}
