package testenv

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/fsctl/fsctl/internal/harness/stack"
	"github.com/fsctl/fsctl/internal/harness/testenv/eventually"
)

// PrivateRedis starts a redis-server of the test's own on a free loopback port, with no
// persistence, and returns its URL; it is killed when the test ends. For tests that change what
// every client of a server shares (its script cache, its configuration) without disturbing the
// other tests of the stack.
func PrivateRedis(tb testing.TB) string {
	tb.Helper()
	return PrivateRedisNode(tb).URL
}

// RedisNode is a private redis-server of a test, with its process, so that the test can freeze
// it (SIGSTOP), thaw it or kill it: a failover staged on real processes.
type RedisNode struct {
	// Addr is host:port, URL the redis:// URL of database 0.
	Addr, URL string
	cmd       *exec.Cmd
}

// Signal sends sig to the node's process (syscall.SIGSTOP freezes it, SIGCONT thaws it).
func (n *RedisNode) Signal(sig os.Signal) error { return n.cmd.Process.Signal(sig) }

// Kill ends the node at once, as a crash would (SIGKILL; a frozen node dies too).
func (n *RedisNode) Kill() error {
	if err := n.cmd.Process.Kill(); err != nil {
		return fmt.Errorf("kill redis-server %s: %w", n.Addr, err)
	}
	_ = n.cmd.Wait()
	return nil
}

// PrivateRedisNode starts a redis-server of the test's own on a free loopback port, with no
// persistence and the extra arguments given (e.g. "--replicaof", host, port), and returns once it
// answers; it is killed when the test ends.
func PrivateRedisNode(tb testing.TB, args ...string) *RedisNode {
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
	cmd := exec.Command(bin, append([]string{"--port", fmt.Sprint(port), "--bind", "127.0.0.1", "--save", "",
		"--appendonly", "no", "--dir", tb.TempDir(),
		// A replica's first copy starts at once, not after the default 5 s wait for more replicas.
		"--repl-diskless-sync-delay", "0"}, args...)...)
	if err := cmd.Start(); err != nil {
		tb.Fatalf("start redis-server: %v", err)
	}
	tb.Cleanup(func() { // after Kill these fail harmlessly
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	n := &RedisNode{Addr: fmt.Sprintf("127.0.0.1:%d", port), URL: fmt.Sprintf("redis://127.0.0.1:%d/0", port), cmd: cmd}
	c := redis.NewClient(&redis.Options{Addr: n.Addr})
	defer c.Close()
	eventually.OK(tb, 10*time.Second, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		if err := c.Ping(ctx).Err(); err != nil {
			return fmt.Errorf("private redis-server on port %d never answered: %w", port, err)
		}
		return nil
	})
	return n
}

// PrivateRedisReplica starts a private redis-server replicating master (--replicaof) and returns
// once it acknowledges the master's stream, so a WAIT from then on counts it; it is killed when
// the test ends. Counted "online" is not enough: after the first copy a master streams nothing to
// the replica until its first acknowledgement, up to a second later.
func PrivateRedisReplica(tb testing.TB, master *RedisNode) *RedisNode {
	tb.Helper()
	host, port, err := net.SplitHostPort(master.Addr)
	if err != nil {
		tb.Fatal(err)
	}
	n := PrivateRedisNode(tb, "--replicaof", host, port)
	_, own, _ := net.SplitHostPort(n.Addr)
	c := redis.NewClient(&redis.Options{Addr: master.Addr})
	defer c.Close()
	eventually.OK(tb, 20*time.Second, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		if acked, err := replicaAcked(ctx, c, own); !acked {
			return fmt.Errorf("private replica %s of %s never acknowledged the master's stream: %v", n.Addr, master.Addr, err)
		}
		return nil
	})
	return n
}

// replicaAcked reports whether the replica listening on port is online at the master and
// acknowledges its stream: a probe written through the master (a key set and deleted) is
// acknowledged by every connected replica within a WAIT on the same connection.
func replicaAcked(ctx context.Context, c *redis.Client, port string) (bool, error) {
	info, err := c.Info(ctx, "replication").Result()
	if err != nil {
		return false, err
	}
	if !strings.Contains(info, ",port="+port+",state=online,") {
		return false, fmt.Errorf("replica on port %s not online at the master", port)
	}
	connected := 0
	for _, line := range strings.Split(info, "\r\n") {
		if v, ok := strings.CutPrefix(line, "connected_slaves:"); ok {
			connected, _ = strconv.Atoi(v)
		}
	}
	const probe = "testenv:replica-probe"
	conn := c.Conn()
	defer conn.Close()
	if err := conn.Set(ctx, probe, "1", time.Minute).Err(); err != nil {
		return false, err
	}
	if err := conn.Del(ctx, probe).Err(); err != nil {
		return false, err
	}
	n, err := conn.Wait(ctx, connected, 200*time.Millisecond).Result()
	if err != nil {
		return false, err
	}
	if int(n) < connected {
		return false, fmt.Errorf("%d of %d replicas acknowledged a write", n, connected)
	}
	return true, nil
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
	return cfg, l.URL(false)
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
