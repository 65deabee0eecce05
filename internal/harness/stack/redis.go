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

func (r redisService) aclFile() string { return filepath.Join(r.dir(), "users.acl") }

// redisArgs is the server's whole configuration, passed on the command line so no config file can
// drift: on a secure stack, TLS only (no plaintext port) and the ACL file's users.
func (r redisService) args() []string {
	return append([]string{
		"--bind", "127.0.0.1",
		"--dir", r.dataDir(),
		"--pidfile", r.pidFile(),
		"--logfile", r.logFile(),
		"--appendonly", "yes",
		"--maxmemory-policy", "noeviction",
		"--daemonize", "yes",
	}, r.c.redisListen(r.c.RedisPort, r.aclFile())...)
}

// redisListen is how a Redis node of the stack listens on port: plain, or TLS only with the
// stack's certificate and the users of aclFile.
func (c Config) redisListen(port int, aclFile string) []string {
	if !c.Secure {
		return []string{"--port", strconv.Itoa(port)}
	}
	s := c.secrets()
	return []string{
		"--port", "0", "--tls-port", strconv.Itoa(port),
		"--tls-cert-file", s.ServerCert(), "--tls-key-file", s.ServerKey(), "--tls-ca-cert-file", s.CA(),
		"--tls-auth-clients", "no", "--aclfile", aclFile,
	}
}

// writeACL writes a secure Redis node's users (0600: it holds their passwords).
func (c Config) writeACL(path string) error {
	if !c.Secure {
		return nil
	}
	pw, err := c.secrets().Password("redis")
	if err != nil {
		return err
	}
	admin, err := c.secrets().Password("redis-admin")
	if err != nil {
		return err
	}
	return writeSecret(path, []byte(redisACL(pw, admin)))
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
	if err := r.c.writeACL(r.aclFile()); err != nil {
		return 0, false, err
	}
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
	client, err := r.c.redisAdmin(r.addr())
	if err != nil {
		return err
	}
	defer client.Close()
	dead := func() error {
		if pid, err := readPID(r.pidFile()); err == nil && !alive(pid, "redis-server") {
			return fmt.Errorf("pid %d exited", pid)
		}
		return nil
	}
	err = waitReady(ctx, 20*time.Second, dead, func(ctx context.Context) error { return client.Ping(ctx).Err() })
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
