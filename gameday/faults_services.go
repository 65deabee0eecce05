package gameday

import (
	"context"
	"fmt"
	"syscall"
	"time"

	"github.com/fsctl/fsctl/internal/checkout/room"
	"github.com/fsctl/fsctl/internal/harness/stack"
	"github.com/fsctl/fsctl/internal/platform/redisconn"
)

type redisRestartEmpty struct{ Down time.Duration }

func (redisRestartEmpty) Name() string { return "redis-restart-empty" }
func (f redisRestartEmpty) Describe() string {
	return fmt.Sprintf("kill -9 redis, restart it empty after %s, rebuild from PostgreSQL", f.Down)
}

func (f redisRestartEmpty) Apply(ctx context.Context, env *Env) (string, error) {
	if env.Stack.RedisCluster.Masters > 0 {
		return restartClusterEmpty(ctx, env, f.Down)
	}
	pid, err := stack.Kill(ctx, env.Stack, stack.Redis, syscall.SIGKILL)
	if err != nil {
		return "", err
	}
	env.Note("redis killed (pid %d)", pid)
	var npid int
	rebuilt, err := env.RebuildLost(ctx, func(ctx context.Context) error {
		if err := sleep(ctx, f.Down); err != nil {
			return err
		}
		if npid, err = stack.Start(ctx, env.Stack, stack.Redis, true); err != nil {
			return err
		}
		env.Note("redis restarted empty (pid %d)", npid)
		return nil
	})
	if err != nil {
		return "", err
	}
	env.Note("redis rebuilt: %s", rebuilt)
	return fmt.Sprintf("killed pid %d, restarted empty as pid %d, rebuilt: %s", pid, npid, rebuilt), nil
}

type kafkaKill struct{ Down time.Duration }

func (kafkaKill) Name() string { return "kafka-kill" }
func (f kafkaKill) Describe() string {
	return fmt.Sprintf("kill -9 the Kafka broker, restart it after %s", f.Down)
}

func (f kafkaKill) Apply(ctx context.Context, env *Env) (string, error) {
	if env.Stack.KafkaCluster.Brokers > 0 {
		return killOrdersLeader(ctx, env, f.Down)
	}
	pid, err := stack.Kill(ctx, env.Stack, stack.Kafka, syscall.SIGKILL)
	if err != nil {
		return "", err
	}
	env.Note("kafka killed (pid %d)", pid)
	if err := sleep(ctx, f.Down); err != nil {
		return "", err
	}
	begin := time.Now()
	npid, err := stack.Start(ctx, env.Stack, stack.Kafka, false)
	if err != nil {
		return "", err
	}
	env.Note("kafka back (pid %d) after a %s start", npid, time.Since(begin).Round(100*time.Millisecond))
	return fmt.Sprintf("killed pid %d, restarted as pid %d (start took %s)", pid, npid, time.Since(begin).Round(100*time.Millisecond)), nil
}

type postgresStop struct{ For time.Duration }

func (postgresStop) Name() string { return "postgres-stop" }
func (f postgresStop) Describe() string {
	return fmt.Sprintf("stop PostgreSQL for %s", f.For)
}

func (f postgresStop) Apply(ctx context.Context, env *Env) (string, error) {
	if err := stack.Stop(ctx, env.Stack, stack.Postgres); err != nil {
		return "", err
	}
	env.Note("postgres stopped")
	if err := sleep(ctx, f.For); err != nil {
		return "", err
	}
	pid, err := stack.Start(ctx, env.Stack, stack.Postgres, false)
	if err != nil {
		return "", err
	}
	env.Note("postgres back (pid %d)", pid)
	return fmt.Sprintf("stopped for %s, back as pid %d", f.For, pid), nil
}

// freeze stops a service's process with SIGSTOP for For and thaws it with SIGCONT: the process
// keeps its sockets and its data but answers nothing, the way a node in a long GC pause, a
// swapped-out VM or a half-dead disk looks to its clients, which time out instead of failing fast.
type freeze struct {
	Service string
	For     time.Duration
}

func (freeze) Name() string { return "freeze" }
func (f freeze) Describe() string {
	return fmt.Sprintf("freeze %s (SIGSTOP) for %s", f.Service, f.For)
}

func (f freeze) Apply(ctx context.Context, env *Env) (string, error) {
	signal, what, err := f.target(ctx, env)
	if err != nil {
		return "", err
	}
	pid, err := signal(syscall.SIGSTOP)
	if err != nil {
		return "", err
	}
	env.Note("%s frozen (pid %d)", what, pid)
	// Thaw whatever happens: a process left stopped would hang every later step and the settle.
	defer func() {
		if _, err := signal(syscall.SIGCONT); err != nil {
			env.Note("%s: thaw: %v", what, err)
		}
	}()
	if err := sleep(ctx, f.For); err != nil {
		return "", err
	}
	env.Note("%s thawed after %s", what, f.For)
	return fmt.Sprintf("%s (pid %d) stopped for %s, then continued", what, pid, f.For), nil
}

// target is the process a freeze signals: the single node, or on a cluster the node that matters
// to the sale's first item.
func (f freeze) target(ctx context.Context, env *Env) (func(syscall.Signal) (int, error), string, error) {
	switch {
	case f.Service == stack.Redis && env.Stack.RedisCluster.Masters > 0:
		addr, err := firstShardMaster(ctx, env)
		if err != nil {
			return nil, "", err
		}
		return func(sig syscall.Signal) (int, error) { return stack.SignalClusterNode(env.Stack, addr, sig) }, "redis master " + addr, nil
	case f.Service == stack.Kafka && env.Stack.KafkaCluster.Brokers > 0:
		addr, err := ordersLeader(ctx, env)
		if err != nil {
			return nil, "", err
		}
		return func(sig syscall.Signal) (int, error) { return stack.SignalKafkaBroker(env.Stack, addr, sig) }, "kafka broker " + addr, nil
	}
	return func(sig syscall.Signal) (int, error) {
		return stack.Kill(context.WithoutCancel(ctx), env.Stack, f.Service, sig)
	}, f.Service, nil
}

type roomLost struct{}

func (roomLost) Name() string     { return "room-state-lost" }
func (roomLost) Describe() string { return "the waiting room's state lost" }

func (roomLost) Apply(ctx context.Context, env *Env) (string, error) {
	rdb, err := redisconn.Open(env.Endpoints.RedisURL, redisconn.Tune{})
	if err != nil {
		return "", err
	}
	defer rdb.Close()
	// What a Redis that loses the room's keys leaves behind: an empty queue, no admissions. The
	// room's own keys are counted (the database's size moves with every other client's keys).
	gone, err := room.New(rdb).Delete(ctx, env.SaleID)
	if err != nil {
		return "", err
	}
	env.Note("waiting room state deleted (%d key(s) gone)", gone)
	return fmt.Sprintf("deleted %d key(s) of the room of sale %s", gone, env.SaleID), nil
}
