package stack

import (
	"context"
	"errors"
	"strings"
	"syscall"
	"testing"
)

// The fault primitives on a stack with nothing running: each says the process is not there,
// never signals a stranger. (The game-day tests use them on a real stack.)
func TestFaultPrimitivesWithoutProcesses(t *testing.T) {
	cfg := Config{Dir: t.TempDir(), RedisPort: 26391, PostgresPort: 25491, KafkaPort: 29191, KafkaControllerPort: 29192}
	ctx := context.Background()
	for _, name := range []string{Redis, Postgres, Kafka} {
		t.Run(name, func(t *testing.T) {
			if _, err := Kill(ctx, cfg, name, syscall.SIGKILL); !errors.Is(err, ErrNotRunning) {
				t.Errorf("Kill: err = %v, want ErrNotRunning", err)
			}
			if err := Stop(ctx, cfg, name); !errors.Is(err, ErrNotRunning) {
				t.Errorf("Stop: err = %v, want ErrNotRunning", err)
			}
			if _, err := PID(cfg, name); !errors.Is(err, ErrNotRunning) {
				t.Errorf("PID: err = %v, want ErrNotRunning", err)
			}
		})
	}
	if _, err := Start(ctx, cfg, Kafka, true); err == nil || !strings.Contains(err.Error(), "only redis can be restarted empty") {
		t.Errorf("wiping kafka: err = %v", err)
	}
	if _, err := Kill(ctx, cfg, "memcached", syscall.SIGKILL); err == nil || !strings.Contains(err.Error(), "unknown service") {
		t.Errorf("unknown service: err = %v", err)
	}
}
