package stack

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// redisService is redis-server, daemonized, with an append-only file and no eviction: a flash sale's
// stock counters must never be evicted to make room.
type redisService struct{ c Config }

func (r redisService) dir() string     { return r.c.redisDir() }
func (r redisService) dataDir() string { return filepath.Join(r.dir(), "data") }
func (r redisService) pidFile() string { return filepath.Join(r.dir(), "redis.pid") }
func (r redisService) logFile() string { return filepath.Join(r.dir(), "redis.log") }
func (r redisService) addr() string    { return fmt.Sprintf("127.0.0.1:%d", r.c.RedisPort) }

func (r redisService) status() ServiceStatus {
	pid, ok := pidFromFile(r.pidFile(), "redis-server")
	return ServiceStatus{Name: "redis", Address: r.addr(), PID: pid, Running: ok, DataDir: r.dataDir(), LogFile: r.logFile()}
}

// redisArgs is the server's whole configuration, passed on the command line so no config file can drift.
func (r redisService) args() []string {
	return []string{
		"--bind", "127.0.0.1",
		"--port", strconv.Itoa(r.c.RedisPort),
		"--dir", r.dataDir(),
		"--pidfile", r.pidFile(),
		"--logfile", r.logFile(),
		"--appendonly", "yes",
		"--maxmemory-policy", "noeviction",
		"--daemonize", "yes",
	}
}

func (r redisService) up(ctx context.Context, _ io.Writer) (int, bool, error) {
	if pid, ok := pidFromFile(r.pidFile(), "redis-server"); ok {
		return pid, false, r.wait(ctx)
	}
	if portTaken(r.c.RedisPort) {
		return 0, false, fmt.Errorf("port %d is taken by a process this stack did not start; stop it or pick another --redis-port", r.c.RedisPort)
	}
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		return 0, false, errors.New("redis-server not found on PATH; run `make deps` (apt-get install redis-server)")
	}
	if err := os.MkdirAll(r.dataDir(), 0o755); err != nil {
		return 0, false, err
	}
	_ = os.Remove(r.pidFile())
	if _, err := runTool(ctx, r.dir(), bin, r.args()...); err != nil {
		return 0, false, fmt.Errorf("%w\nlog %s:\n%s", err, r.logFile(), tail(r.logFile(), 20))
	}
	if err := r.wait(ctx); err != nil {
		return 0, false, err
	}
	pid, _ := pidFromFile(r.pidFile(), "redis-server")
	return pid, true, nil
}

func (r redisService) wait(ctx context.Context) error {
	client := redis.NewClient(&redis.Options{Addr: r.addr(), MaxRetries: -1, DialTimeout: time.Second})
	defer client.Close()
	dead := func() error {
		if pid, err := readPID(r.pidFile()); err == nil && !alive(pid, "redis-server") {
			return fmt.Errorf("pid %d exited", pid)
		}
		return nil
	}
	err := waitReady(ctx, 20*time.Second, dead, func(ctx context.Context) error { return client.Ping(ctx).Err() })
	if err != nil {
		return fmt.Errorf("PING %s: %w\nlog %s:\n%s", r.addr(), err, r.logFile(), tail(r.logFile(), 20))
	}
	return nil
}

func (r redisService) down(ctx context.Context) error {
	pid, ok := pidFromFile(r.pidFile(), "redis-server")
	if !ok {
		return nil
	}
	// SIGTERM makes Redis fsync the append-only file before it exits.
	if err := stopPID(ctx, pid, "redis-server", 20*time.Second); err != nil {
		return err
	}
	_ = os.Remove(r.pidFile())
	return nil
}
