package stack

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"
)

// ClusterNode is one node of the local cluster as `stack status` shows it.
type ClusterNode struct {
	Address string
	Role    string // master, replica (of MasterOf), or down
	// Slots are the hash-slot ranges a master owns, "0-5460".
	Slots    []string
	MasterOf string
	PID      int
}

// ClusterNodes reads every node of the local cluster (none when the stack keeps no cluster).
func ClusterNodes(ctx context.Context, cfg Config) ([]ClusterNode, error) {
	c, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	s := clusterService{c}
	l, ok, err := s.layout()
	if err != nil || !ok {
		return nil, err
	}
	var out []ClusterNode
	for i := range l.Nodes() {
		port := l.Port + i
		n := ClusterNode{Address: fmt.Sprintf("127.0.0.1:%d", port), Role: "down"}
		n.PID, _ = pidFromFile(filepath.Join(s.nodeDir(port), "redis.pid"), "redis-server")
		if n.PID > 0 {
			readNode(ctx, c, &n)
		}
		out = append(out, n)
	}
	return out, nil
}

// readNode fills a node's role and slots from its own line of CLUSTER NODES.
func readNode(ctx context.Context, c Config, n *ClusterNode) {
	rdb, err := c.redisAdmin(n.Address)
	if err != nil {
		n.Role = "unreachable"
		return
	}
	defer rdb.Close()
	text, err := rdb.ClusterNodes(ctx).Result()
	if err != nil {
		n.Role = "unreachable"
		return
	}
	byID := map[string]string{}
	var mine []string
	for _, line := range strings.Split(strings.TrimSpace(text), "\n") {
		f := strings.Fields(line)
		if len(f) < 8 {
			continue
		}
		addr, _, _ := strings.Cut(f[1], "@")
		byID[f[0]] = addr
		if strings.Contains(f[2], "myself") {
			mine = f
		}
	}
	if mine == nil {
		return
	}
	switch {
	case strings.Contains(mine[2], "master"):
		n.Role, n.Slots = "master", slices.Clone(mine[8:])
	case strings.Contains(mine[2], "slave"):
		n.Role, n.MasterOf = "replica", byID[mine[3]]
	}
}

// clusterNode finds one node of the local cluster by its address.
func clusterNode(cfg Config, addr string) (clusterService, int, error) {
	c, err := cfg.withDefaults()
	if err != nil {
		return clusterService{}, 0, err
	}
	s := clusterService{c}
	l, ok, err := s.layout()
	if err != nil {
		return s, 0, err
	}
	if !ok {
		return s, 0, errors.New("this stack keeps no Redis Cluster: start one with fsctl stack up --redis-cluster 3")
	}
	for i := range l.Nodes() {
		if fmt.Sprintf("127.0.0.1:%d", l.Port+i) == addr {
			return s, l.Port + i, nil
		}
	}
	return s, 0, fmt.Errorf("%s is not a node of the local cluster (%s and its replicas)", addr, strings.Join(l.Seeds(), ","))
}

// KillClusterNode kills one node of the local Redis Cluster with SIGKILL, as a crash would (no
// AOF fsync), and waits until it is gone; it returns the pid, or ErrNotRunning.
func KillClusterNode(ctx context.Context, cfg Config, addr string) (int, error) {
	pid, err := SignalClusterNode(cfg, addr, syscall.SIGKILL)
	if err != nil {
		return pid, err
	}
	if !waitGone(ctx, pid, 10*time.Second) {
		return pid, fmt.Errorf("cluster node %s (pid %d) still alive 10s after SIGKILL", addr, pid)
	}
	return pid, nil
}

// StartClusterNode starts a stopped node of the local Redis Cluster again with its data and its
// nodes.conf, so it rejoins the cluster (as a replica, when another node took over its slots),
// and waits until it answers; it returns the new pid.
func StartClusterNode(ctx context.Context, cfg Config, addr string) (int, error) {
	s, port, err := clusterNode(cfg, addr)
	if err != nil {
		return 0, err
	}
	d := s.nodeDir(port)
	if pid, ok := pidFromFile(filepath.Join(d, "redis.pid"), "redis-server"); ok {
		return pid, nil
	}
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		return 0, errors.New("redis-server not found on PATH; run `make deps` (apt-get install redis-server)")
	}
	_ = os.Remove(filepath.Join(d, "redis.pid"))
	if err := s.writeSecrets(); err != nil {
		return 0, err
	}
	if _, err := runTool(ctx, d, bin, s.nodeArgs(port)...); err != nil {
		return 0, fmt.Errorf("start cluster node %s: %w\nlog:\n%s", addr, err, tail(filepath.Join(d, "redis.log"), 20))
	}
	n, err := s.c.redisAdmin(addr)
	if err != nil {
		return 0, err
	}
	defer n.Close()
	if err := waitReady(ctx, 20*time.Second, func() error { return nil }, func(ctx context.Context) error { return n.Ping(ctx).Err() }); err != nil {
		return 0, fmt.Errorf("start cluster node %s: %w", addr, err)
	}
	pid, _ := pidFromFile(filepath.Join(d, "redis.pid"), "redis-server")
	return pid, nil
}

// WipeClusterNodeData deletes a stopped node's data (its AOF and RDB files) but keeps its
// nodes.conf, so started again it is the node that lost its disk: the same member of the cluster,
// owning the same slots, holding no keys.
func WipeClusterNodeData(cfg Config, addr string) error {
	s, port, err := clusterNode(cfg, addr)
	if err != nil {
		return err
	}
	d := s.nodeDir(port)
	if _, ok := pidFromFile(filepath.Join(d, "redis.pid"), "redis-server"); ok {
		return fmt.Errorf("wipe cluster node %s: it is still running", addr)
	}
	for _, name := range []string{"appendonlydir", "dump.rdb"} {
		if err := os.RemoveAll(filepath.Join(d, name)); err != nil {
			return fmt.Errorf("wipe cluster node %s: %w", addr, err)
		}
	}
	return nil
}

// SignalClusterNode sends sig to one node of the local Redis Cluster: SIGSTOP freezes it (a
// replica that falls behind, a master that stops answering without dying), SIGCONT thaws it. It
// returns the pid, or ErrNotRunning.
func SignalClusterNode(cfg Config, addr string, sig syscall.Signal) (int, error) {
	s, port, err := clusterNode(cfg, addr)
	if err != nil {
		return 0, err
	}
	pid, ok := pidFromFile(filepath.Join(s.nodeDir(port), "redis.pid"), "redis-server")
	if !ok {
		return 0, fmt.Errorf("signal cluster node %s: %w", addr, ErrNotRunning)
	}
	if err := syscall.Kill(pid, sig); err != nil {
		return pid, fmt.Errorf("signal %d to cluster node %s (pid %d): %w", sig, addr, pid, err)
	}
	return pid, nil
}

// ClusterNodeLog is the last n lines of a local cluster node's log, indented, for a test or an
// error message to show why a node did what it did (a failover that never came).
func ClusterNodeLog(cfg Config, addr string, n int) string {
	s, port, err := clusterNode(cfg, addr)
	if err != nil {
		return "  (" + err.Error() + ")"
	}
	return tail(filepath.Join(s.nodeDir(port), "redis.log"), n)
}
