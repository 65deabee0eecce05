package stack

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"time"
)

// Service names accepted by the fault primitives.
const (
	Redis    = "redis"
	Postgres = "postgres"
	Kafka    = "kafka"
	// RedisCluster is the local Redis Cluster (fsctl stack up --redis-cluster N), as a whole;
	// KillClusterNode and StartClusterNode take one node of it.
	RedisCluster = "redis-cluster"
	// KafkaCluster is the local replicated Kafka (fsctl stack up --kafka-cluster N), as a whole;
	// KillKafkaBroker and StartKafkaBroker take one broker of it.
	KafkaCluster = "kafka-cluster"
)

// ErrNotRunning is returned when a fault targets a service whose process is not running: the
// fault cannot be applied, and a game day must say so rather than pretend it happened.
var ErrNotRunning = errors.New("process not running")

// service picks one service of the stack by name.
func (c Config) service(name string) (service, error) {
	switch name {
	case Redis:
		return redisService{c}, nil
	case Postgres:
		return postgresService{c}, nil
	case Kafka:
		return kafkaService{c}, nil
	case RedisCluster:
		if _, ok, err := (clusterService{c}).layout(); err != nil || !ok {
			return nil, fmt.Errorf("this stack keeps no Redis Cluster: start one with fsctl stack up --redis-cluster 3 (%v)", err)
		}
		return clusterService{c}, nil
	case KafkaCluster:
		if _, ok, err := (kafkaClusterService{c}).layout(); err != nil || !ok {
			return nil, fmt.Errorf("this stack keeps no Kafka cluster: start one with fsctl stack up --kafka-cluster 3 (%v)", err)
		}
		return kafkaClusterService{c}, nil
	}
	return nil, fmt.Errorf("unknown service %q (want redis, postgres, kafka, redis-cluster or kafka-cluster)", name)
}

// Kill sends sig to one service's main process, as a crash would (SIGKILL: no shutdown, no
// flush), and waits until it is gone when sig is SIGKILL. It returns the pid it signalled, or
// ErrNotRunning when the service has no live process.
func Kill(ctx context.Context, cfg Config, name string, sig syscall.Signal) (int, error) {
	_, st, err := liveService(cfg, name)
	if err != nil {
		return 0, fmt.Errorf("kill %s: %w", name, err)
	}
	if err := syscall.Kill(st.PID, sig); err != nil {
		return st.PID, fmt.Errorf("kill -%d %s (pid %d): %w", sig, name, st.PID, err)
	}
	if sig != syscall.SIGKILL {
		return st.PID, nil
	}
	if !waitGone(ctx, st.PID, 10*time.Second) {
		return st.PID, fmt.Errorf("%s (pid %d) still alive 10s after SIGKILL", name, st.PID)
	}
	// A killed postgres leaves its children (backends, checkpointer) to notice the postmaster is
	// gone; pg_ctl refuses to start while they hold the shared memory, so they are killed too.
	if name == Postgres && groupSize(st.PID) > 0 {
		_ = syscall.Kill(-st.PID, syscall.SIGKILL)
	}
	return st.PID, nil
}

// Stop stops one service cleanly (SIGTERM, then SIGKILL after a grace period), leaving its data.
func Stop(ctx context.Context, cfg Config, name string) error {
	return locked(cfg, func(c Config) error {
		s, err := c.service(name)
		if err != nil {
			return err
		}
		// A cluster with a node down is not "running", yet its other nodes must stop.
		if !s.status().Running && name != KafkaCluster && name != RedisCluster {
			return fmt.Errorf("stop %s: %w", name, ErrNotRunning)
		}
		return s.down(ctx)
	})
}

// Start starts one service unless it runs and waits until it is ready. With wipe, the service's
// data is deleted first (it must not be running): Redis then comes back empty, as a node that
// lost its disk would. Only Redis can be wiped; the other two hold the source of truth and the
// order log.
func Start(ctx context.Context, cfg Config, name string, wipe bool) (int, error) {
	var pid int
	err := locked(cfg, func(c Config) error {
		s, err := c.service(name)
		if err != nil {
			return err
		}
		if wipe {
			if name != Redis {
				return fmt.Errorf("start %s: only redis can be restarted empty", name)
			}
			if s.status().Running {
				return fmt.Errorf("start %s empty: it is still running", name)
			}
			r := s.(redisService)
			if err := os.RemoveAll(r.dataDir()); err != nil {
				return fmt.Errorf("wipe %s: %w", r.dataDir(), err)
			}
			_ = os.Remove(filepath.Join(r.dir(), "redis.pid"))
		}
		if err := c.writeRecord(); err != nil {
			return err
		}
		pid, _, err = s.up(ctx, c.Log)
		if err != nil {
			return fmt.Errorf("start %s: %w", name, err)
		}
		return nil
	})
	return pid, err
}

// PID returns the live pid of one service, or ErrNotRunning.
func PID(cfg Config, name string) (int, error) {
	_, st, err := liveService(cfg, name)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", name, err)
	}
	return st.PID, nil
}

// liveService resolves cfg and finds the service's running process; ErrNotRunning when it has none.
func liveService(cfg Config, name string) (Config, ServiceStatus, error) {
	c, err := cfg.withDefaults()
	if err != nil {
		return c, ServiceStatus{}, err
	}
	s, err := c.service(name)
	if err != nil {
		return c, ServiceStatus{}, err
	}
	st := s.status()
	if !st.Running {
		return c, st, fmt.Errorf("%w (no live pid in its pidfile under %s)", ErrNotRunning, c.Dir)
	}
	return c, st, nil
}
