package stack

import (
	"context"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// form makes the nodes one cluster, once: the masters take their slot ranges, meet, and the
// replicas follow their masters; then it waits until every node says cluster_state:ok. A formed
// cluster is only probed.
func (s clusterService) form(ctx context.Context, l ClusterLayout) error {
	nodes := make([]*redis.Client, l.Nodes())
	for i := range nodes {
		n, err := s.c.redisAdmin(fmt.Sprintf("127.0.0.1:%d", l.Port+i))
		if err != nil {
			return err
		}
		defer n.Close()
		nodes[i] = n
	}
	for i, n := range nodes {
		if err := waitReady(ctx, 20*time.Second, func() error { return nil }, func(ctx context.Context) error { return n.Ping(ctx).Err() }); err != nil {
			return fmt.Errorf("node %d: PING: %w\nlog:\n%s", l.Port+i, err, tail(filepath.Join(s.nodeDir(l.Port+i), "redis.log"), 20))
		}
	}
	if s.formed(ctx, nodes) == nil {
		return nil
	}
	if s.remembered(ctx, nodes) {
		// A restart: every node knows every other from its nodes.conf, with the roles the cluster
		// has now (a replica promoted by a failover stays a master). Forming it again from the
		// layout would tell that master to replicate its old master, now its own replica.
		if err := waitCluster(ctx, nodes, func(info string) bool { return infoValue(info, "cluster_state") == "ok" }); err != nil {
			return fmt.Errorf("the cluster did not come back to cluster_state:ok: %w", err)
		}
		return nil
	}
	if err := assignSlots(ctx, l, nodes); err != nil {
		return err
	}
	for i := 1; i < len(nodes); i++ {
		if err := nodes[0].ClusterMeet(ctx, "127.0.0.1", strconv.Itoa(l.Port+i)).Err(); err != nil {
			return fmt.Errorf("CLUSTER MEET %d: %w", l.Port+i, err)
		}
	}
	if err := waitCluster(ctx, nodes, func(info string) bool { return infoValue(info, "cluster_known_nodes") == strconv.Itoa(len(nodes)) }); err != nil {
		return fmt.Errorf("the nodes did not meet: %w", err)
	}
	if err := replicate(ctx, l, nodes); err != nil {
		return err
	}
	if err := waitCluster(ctx, nodes, func(info string) bool { return infoValue(info, "cluster_state") == "ok" }); err != nil {
		return fmt.Errorf("the cluster did not reach cluster_state:ok: %w", err)
	}
	if err := waitSynced(ctx, l, nodes); err != nil {
		return err
	}
	return s.formed(ctx, nodes)
}

// assignSlots gives each master its range of the 16384 slots, skipping one that holds slots
// already.
func assignSlots(ctx context.Context, l ClusterLayout, nodes []*redis.Client) error {
	for m := range l.Masters {
		lo, hi := m*16384/l.Masters, (m+1)*16384/l.Masters-1
		info, err := nodes[m].ClusterInfo(ctx).Result()
		if err != nil {
			return fmt.Errorf("node %d: %w", l.Port+m, err)
		}
		if infoValue(info, "cluster_slots_assigned") != "0" {
			continue // it took its slots in an earlier, interrupted run
		}
		if err := nodes[m].Do(ctx, "cluster", "addslotsrange", lo, hi).Err(); err != nil {
			return fmt.Errorf("node %d: CLUSTER ADDSLOTSRANGE %d %d: %w", l.Port+m, lo, hi, err)
		}
	}
	return nil
}

// replicate makes each replica that is not one yet follow its master.
func replicate(ctx context.Context, l ClusterLayout, nodes []*redis.Client) error {
	for r := l.Masters; r < len(nodes); r++ {
		master := (r - l.Masters) % l.Masters
		id, err := nodes[master].Do(ctx, "cluster", "myid").Text()
		if err != nil {
			return fmt.Errorf("node %d: CLUSTER MYID: %w", l.Port+master, err)
		}
		if role, _ := nodes[r].Do(ctx, "role").Slice(); len(role) > 0 && role[0] == "slave" {
			continue
		}
		if err := nodes[r].Do(ctx, "cluster", "replicate", id).Err(); err != nil {
			return fmt.Errorf("node %d: CLUSTER REPLICATE %s: %w", l.Port+r, id, err)
		}
	}
	return nil
}

// waitSynced waits until every replica holds its master's data: a replica that never synced
// cannot take over.
func waitSynced(ctx context.Context, l ClusterLayout, nodes []*redis.Client) error {
	for r := l.Masters; r < len(nodes); r++ {
		n := nodes[r]
		err := waitReady(ctx, 30*time.Second, func() error { return nil }, func(ctx context.Context) error {
			info, err := n.Info(ctx, "replication").Result()
			if err != nil {
				return err
			}
			if v := infoValue(info, "master_link_status"); v != "up" {
				return fmt.Errorf("replica %s: master_link_status:%s", n.Options().Addr, v)
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("replica %d never synced with its master: %w", l.Port+r, err)
		}
	}
	return nil
}

// remembered reports whether every node already knows every other one (a cluster formed before
// and restarted), whatever its state is yet.
func (s clusterService) remembered(ctx context.Context, nodes []*redis.Client) bool {
	for _, n := range nodes {
		info, err := n.ClusterInfo(ctx).Result()
		if err != nil || infoValue(info, "cluster_known_nodes") != strconv.Itoa(len(nodes)) {
			return false
		}
	}
	return true
}

// formed is nil once every node says cluster_state:ok and knows every other node.
func (s clusterService) formed(ctx context.Context, nodes []*redis.Client) error {
	for _, n := range nodes {
		info, err := n.ClusterInfo(ctx).Result()
		if err != nil {
			return err
		}
		if infoValue(info, "cluster_state") != "ok" || infoValue(info, "cluster_known_nodes") != strconv.Itoa(len(nodes)) {
			return fmt.Errorf("%s: cluster_state:%s, %s known nodes", n.Options().Addr, infoValue(info, "cluster_state"), infoValue(info, "cluster_known_nodes"))
		}
	}
	return nil
}

// waitCluster polls every node's CLUSTER INFO until done holds for all, for up to 30 s.
func waitCluster(ctx context.Context, nodes []*redis.Client, done func(info string) bool) error {
	return waitReady(ctx, 30*time.Second, func() error { return nil }, func(ctx context.Context) error {
		for _, n := range nodes {
			info, err := n.ClusterInfo(ctx).Result()
			if err != nil {
				return err
			}
			if !done(info) {
				return fmt.Errorf("%s not yet: %s, %s known nodes", n.Options().Addr,
					"cluster_state:"+infoValue(info, "cluster_state"), infoValue(info, "cluster_known_nodes"))
			}
		}
		return nil
	})
}

func infoValue(info, name string) string {
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), name+":"); ok {
			return v
		}
	}
	return ""
}
