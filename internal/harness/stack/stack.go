package stack

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"
)

// ServiceStatus says what one service of the stack is, where it listens and whether it runs.
type ServiceStatus struct {
	Name    string // "redis", "postgres", "kafka", "redis-cluster", "kafka-cluster" or "issuer"
	Address string // host:port on loopback
	PID     int    // 0 when not running
	Running bool
	DataDir string
	LogFile string
}

// service is one process of the stack; each knows its own files, start-up and readiness probe.
type service interface {
	status() ServiceStatus
	// up starts the service unless it already runs and returns once it answers its readiness probe.
	up(ctx context.Context, log io.Writer) (pid int, started bool, err error)
	down(ctx context.Context) error
}

func services(c Config) []service {
	out := []service{redisService{c}, postgresService{c}, kafkaService{c}}
	if _, ok, err := (clusterService{c}).layout(); ok || err != nil {
		out = append(out, clusterService{c})
	}
	if _, ok, err := (kafkaClusterService{c}).layout(); ok || err != nil {
		out = append(out, kafkaClusterService{c})
	}
	if c.hasIssuer() {
		out = append(out, issuerService{c})
	}
	return out
}

// Up starts whichever services of the stack are not running yet and waits until each is ready.
// Calling it again is harmless: running services are only probed.
func Up(ctx context.Context, cfg Config) error {
	return locked(cfg, func(c Config) error { return up(ctx, c) })
}

func up(ctx context.Context, c Config) error {
	if err := c.refusePlainData(); err != nil {
		return err
	}
	if err := c.writeRecord(); err != nil {
		return err
	}
	if c.Secure {
		renewed, err := c.secrets().ensure(c.Renew, c.Log)
		if err != nil {
			return fmt.Errorf("secure stack: %w", err)
		}
		// A service serves the certificate it read at its start: a renewed one needs a restart.
		if renewed && running(c) {
			fmt.Fprintf(c.Log, "%-9s restarting the services on the new certificate\n", "tls")
			if err := down(ctx, c); err != nil {
				return err
			}
		}
	}
	out := &syncWriter{w: c.Log}
	// Start in parallel: the JVM's start-up dominates, and the other two fit inside it.
	var wg sync.WaitGroup
	svcs := services(c)
	errs := make([]error, len(svcs))
	for i, s := range svcs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			begin := time.Now()
			st := s.status()
			pid, started, err := s.up(ctx, out)
			switch {
			case err != nil:
				errs[i] = fmt.Errorf("%s: %w", st.Name, err)
			case started:
				fmt.Fprintf(out, "%-9s started on %s (pid %d) in %s\n", st.Name, st.Address, pid, time.Since(begin).Round(100*time.Millisecond))
			default:
				fmt.Fprintf(out, "%-9s already running on %s (pid %d)\n", st.Name, st.Address, pid)
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// running reports whether any service of the stack runs.
func running(c Config) bool {
	for _, s := range services(c) {
		if s.status().Running {
			return true
		}
	}
	return false
}

// Down stops every service of the stack and waits until its processes are gone. Data stays.
func Down(ctx context.Context, cfg Config) error {
	return locked(cfg, func(c Config) error { return down(ctx, c) })
}

func down(ctx context.Context, c Config) error {
	var errs []error
	// Kafka first: it is the slowest to stop and nothing depends on it at shutdown.
	svcs := services(c)
	for i := len(svcs) - 1; i >= 0; i-- {
		st := svcs[i].status()
		if !st.Running {
			fmt.Fprintf(c.Log, "%-9s not running\n", st.Name)
			continue
		}
		if err := svcs[i].down(ctx); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", st.Name, err))
			continue
		}
		fmt.Fprintf(c.Log, "%-9s stopped (pid %d)\n", st.Name, st.PID)
	}
	return errors.Join(errs...)
}

// Status reports each service of the stack; it starts and stops nothing.
func Status(ctx context.Context, cfg Config) ([]ServiceStatus, error) {
	c, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	var out []ServiceStatus
	for _, s := range services(c) {
		if ctx.Err() != nil {
			return out, ctx.Err()
		}
		out = append(out, s.status())
	}
	return out, nil
}

// locked runs fn with cfg's defaults filled in, holding the stack dir's lock.
func locked(cfg Config, fn func(Config) error) error {
	c, err := cfg.withDefaults()
	if err != nil {
		return err
	}
	unlock, err := lock(c)
	if err != nil {
		return err
	}
	defer unlock()
	return fn(c)
}

// lock serialises Up and Down on one stack dir, so two `make` targets racing to bring the stack up
// do not both start a server on the same files.
func lock(c Config) (func(), error) {
	if err := os.MkdirAll(c.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("stack dir: %w", err)
	}
	f, err := os.OpenFile(filepath.Join(c.Dir, ".lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("stack lock: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return nil, fmt.Errorf("stack lock: %w", err)
	}
	return func() { f.Close() }, nil
}

// syncWriter lets the parallel start-ups print whole lines without interleaving.
type syncWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}
