package gameday

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/segmentio/kafka-go"

	"github.com/fsctl/fsctl/internal/checkout/events"
	"github.com/fsctl/fsctl/internal/checkout/stock"
	"github.com/fsctl/fsctl/internal/harness/stack"
	"github.com/fsctl/fsctl/internal/platform/kafkaconn"
	"github.com/fsctl/fsctl/internal/platform/reach"
	"github.com/fsctl/fsctl/internal/platform/redisconn"
)

// The faults of a game day on a Redis Cluster or a replicated Kafka (--redis-cluster,
// --kafka-cluster): the built-in ones act on the whole cluster where the single node would have
// been hit, and redis-master-kill takes one master away.

// restartClusterEmpty is redis-restart-empty on a Redis Cluster: every node killed, its data wiped
// (its nodes.conf kept: the same cluster, the same slots, no keys), started again after down.
func restartClusterEmpty(ctx context.Context, env *Env, down time.Duration) (string, error) {
	l := env.Stack.RedisCluster
	for _, addr := range l.Addrs() {
		if _, err := stack.KillClusterNode(ctx, env.Stack, addr); err != nil {
			return "", err
		}
	}
	env.Note("redis cluster killed (%d nodes)", l.Nodes())
	rebuilt, err := env.RebuildLost(ctx, func(ctx context.Context) error {
		if err := sleep(ctx, down); err != nil {
			return err
		}
		addrs := l.Addrs()
		errs := make([]error, len(addrs))
		var wg sync.WaitGroup
		for i, addr := range addrs { // all at once: a master alone waits for the others to agree
			wg.Go(func() {
				if errs[i] = stack.WipeClusterNodeData(env.Stack, addr); errs[i] == nil {
					_, errs[i] = stack.StartClusterNode(ctx, env.Stack, addr)
				}
			})
		}
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			return err
		}
		if err := waitClusterOK(ctx, env, 30*time.Second); err != nil {
			return err
		}
		env.Note("redis cluster restarted empty")
		return nil
	})
	if err != nil {
		return "", err
	}
	env.Note("redis rebuilt: %s", rebuilt)
	return fmt.Sprintf("killed the %d nodes of the cluster, restarted them empty, rebuilt: %s", l.Nodes(), rebuilt), nil
}

// waitClusterOK waits until the cluster answers as a whole again.
func waitClusterOK(ctx context.Context, env *Env, limit time.Duration) error {
	rdb, err := redisconn.Open(env.Endpoints.RedisURL, redisconn.Tune{MaxRetries: -1, DialerRetries: 1})
	if err != nil {
		return err
	}
	defer rdb.Close()
	deadline := time.Now().Add(limit)
	for {
		cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		err := redisconn.Check(cctx, rdb)
		cancel()
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the redis cluster did not recover in %s: %w", limit, err)
		}
		if err := sleep(ctx, 200*time.Millisecond); err != nil {
			return err
		}
	}
}

// killOrdersLeader is kafka-kill on a replicated Kafka: the broker that leads the partition the
// sale's first item's orders go to is killed, and started again after down.
func killOrdersLeader(ctx context.Context, env *Env, down time.Duration) (string, error) {
	leader, err := ordersLeader(ctx, env)
	if err != nil {
		return "", err
	}
	pid, err := stack.KillKafkaBroker(ctx, env.Stack, leader)
	if err != nil {
		return "", err
	}
	env.Note("kafka broker %s killed (pid %d), the leader of the orders partition", leader, pid)
	if err := sleep(ctx, down); err != nil {
		return "", err
	}
	begin := time.Now()
	npid, err := stack.StartKafkaBroker(ctx, env.Stack, leader)
	if err != nil {
		return "", err
	}
	took := time.Since(begin).Round(100 * time.Millisecond)
	env.Note("kafka broker %s back (pid %d) after a %s start", leader, npid, took)
	return fmt.Sprintf("killed broker %s (pid %d), the orders partition's leader, restarted as pid %d (start took %s)", leader, pid, npid, took), nil
}

func ordersLeader(ctx context.Context, env *Env) (string, error) {
	c, closeIdle, err := kafkaconn.NewClient(kafkaconn.EnvFor(env.Endpoints.KafkaBrokers), 5*time.Second)
	if err != nil {
		return "", err
	}
	defer closeIdle()
	meta, err := c.Metadata(ctx, &kafka.MetadataRequest{Topics: []string{events.DefaultOrdersTopic}})
	if err != nil {
		return "", fmt.Errorf("orders topic metadata: %w", err)
	}
	if len(meta.Topics) != 1 || len(meta.Topics[0].Partitions) == 0 {
		return "", fmt.Errorf("orders topic %s has no partitions", events.DefaultOrdersTopic)
	}
	parts := meta.Topics[0].Partitions
	ids := make([]int, len(parts))
	for i, p := range parts {
		ids[i] = p.ID
	}
	want := (&kafka.Hash{}).Balance(kafka.Message{Key: []byte(env.SaleID + "/" + env.FirstItem)}, ids...)
	for _, p := range parts {
		if p.ID == want {
			return fmt.Sprintf("%s:%d", p.Leader.Host, p.Leader.Port), nil
		}
	}
	return "", fmt.Errorf("no partition %d in %s", want, events.DefaultOrdersTopic)
}

// redisMasterKill takes the master that holds the sale's first item's shard 0 away for Down: with
// a replica, the replica takes over and the old master comes back as its replica; without one,
// the master's shards are stranded (their buyers told to retry) until it is back. Wipe brings it
// back without its data, as a node that lost its disk; a master that comes back empty and still
// owns its slots is rebuilt from PostgreSQL.
type redisMasterKill struct {
	Down time.Duration
	Wipe bool
}

func (redisMasterKill) Name() string { return "redis-master-kill" }
func (f redisMasterKill) Describe() string {
	how := "with its data"
	if f.Wipe {
		how = "empty"
	}
	return fmt.Sprintf("kill -9 the Redis Cluster master of the first item's shard 0, start it again %s after %s", how, f.Down)
}

func (f redisMasterKill) Apply(ctx context.Context, env *Env) (string, error) {
	if env.Stack.RedisCluster.Masters == 0 {
		return "", fmt.Errorf("redis-master-kill needs a Redis Cluster: run the game day with --redis-cluster 3")
	}
	victim, err := firstShardMaster(ctx, env)
	if err != nil {
		return "", err
	}
	pid, err := stack.KillClusterNode(ctx, env.Stack, victim)
	if err != nil {
		return "", err
	}
	env.Note("redis master %s killed (pid %d)", victim, pid)
	if err := sleep(ctx, f.Down); err != nil {
		return "", err
	}
	if f.Wipe {
		if err := stack.WipeClusterNodeData(env.Stack, victim); err != nil {
			return "", err
		}
	}
	npid, err := stack.StartClusterNode(ctx, env.Stack, victim)
	if err != nil {
		return "", err
	}
	if err := waitClusterOK(ctx, env, 30*time.Second); err != nil {
		return "", err
	}
	role, _ := clusterRole(ctx, env, victim)
	note := fmt.Sprintf("killed master %s (pid %d), back after %s as pid %d, now a %s", victim, pid, f.Down, npid, role)
	env.Note("redis node %s back (pid %d) as a %s", victim, npid, role)
	if f.Wipe && role == "master" {
		rebuilt, err := env.Rebuild(ctx)
		if err != nil {
			return "", fmt.Errorf("rebuild redis from postgres: %w", err)
		}
		env.Note("redis rebuilt: %s", rebuilt)
		note += "; came back empty, rebuilt: " + rebuilt
	}
	return note, nil
}

// firstShardMaster is the address of the Redis Cluster master that holds the sale's first item's
// shard 0: where the faults that take one node away aim.
func firstShardMaster(ctx context.Context, env *Env) (string, error) {
	rdb, err := redisconn.Open(env.Endpoints.RedisURL, redisconn.Tune{})
	if err != nil {
		return "", err
	}
	defer rdb.Close()
	cc, ok := rdb.(*redis.ClusterClient)
	if !ok {
		return "", fmt.Errorf("%s is not a Redis Cluster", reach.Redact(env.Endpoints.RedisURL))
	}
	m, err := cc.MasterForKey(ctx, stock.ShardKeys(env.SaleID, env.FirstItem, 0, env.FirstItemShards).Stock())
	if err != nil {
		return "", err
	}
	return m.Options().Addr, nil
}

// clusterRole is what a node of the local cluster is now: master or replica.
func clusterRole(ctx context.Context, env *Env, addr string) (string, error) {
	nodes, err := stack.ClusterNodes(ctx, env.Stack)
	if err != nil {
		return "", err
	}
	for _, n := range nodes {
		if n.Address == addr {
			return strings.ToLower(n.Role), nil
		}
	}
	return "", fmt.Errorf("%s is not a node of the local cluster", addr)
}
