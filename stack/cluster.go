package stack

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"
)

// The local Redis Cluster: Masters masters with Replicas replicas each, node i on Port+i (its
// cluster bus on Port+i+10000), every node a redis-server process of its own under
// <dir>/redis-cluster/<port>. Masters own the 16,384 hash slots in equal ranges.
type ClusterLayout struct {
	Masters  int `json:"masters"`
	Replicas int `json:"replicas"`
	Port     int `json:"port"`
}

// DefaultRedisClusterPort is the first node's port of the local cluster; a secure stack's starts
// at DefaultSecureRedisClusterPort, so both stacks may keep one.
const (
	DefaultRedisClusterPort       = 17000
	DefaultSecureRedisClusterPort = 16400
)

// Nodes is the number of redis-server processes of the layout.
func (l ClusterLayout) Nodes() int { return l.Masters * (1 + l.Replicas) }

// Seeds are the masters' addresses, the cluster's address for a client.
func (l ClusterLayout) Seeds() []string {
	out := make([]string, l.Masters)
	for i := range out {
		out[i] = fmt.Sprintf("127.0.0.1:%d", l.Port+i)
	}
	return out
}

// Addrs are every node's address, masters first, then their replicas.
func (l ClusterLayout) Addrs() []string {
	out := make([]string, l.Nodes())
	for i := range out {
		out[i] = fmt.Sprintf("127.0.0.1:%d", l.Port+i)
	}
	return out
}

// URL is the cluster's address in the form every fsctl command takes; tls for a cluster that
// speaks only TLS (a secure stack's).
func (l ClusterLayout) URL(tls bool) string {
	scheme := "redis+cluster://"
	if tls {
		scheme = "rediss+cluster://"
	}
	return scheme + strings.Join(l.Seeds(), ",")
}

func (l ClusterLayout) validate() error {
	switch {
	case l.Masters < 3:
		return fmt.Errorf("--redis-cluster %d: a Redis Cluster needs at least 3 masters", l.Masters)
	case l.Replicas < 0 || l.Replicas > 3:
		return fmt.Errorf("--redis-cluster-replicas %d: 0 to 3 replicas per master", l.Replicas)
	case l.Port <= 0 || l.Port+l.Nodes()+10000 > 65535:
		return fmt.Errorf("--redis-cluster-port %d: the nodes and their cluster bus (port + 10000) must fit below 65536", l.Port)
	case l.Port+l.Nodes()+10000 > 32768:
		return fmt.Errorf("--redis-cluster-port %d: the cluster bus (port + 10000) would reach Linux's ephemeral ports (32768 up), where any client socket may take it; pick a port below %d", l.Port, 32768-10000-l.Nodes())
	}
	return nil
}

// clusterService is the local Redis Cluster as one service of the stack: it starts, forms and
// stops every node. It exists once a layout was asked for, and is remembered in layout.json, so a
// later `stack up`, `status` or `down` without the flag keeps to it.
type clusterService struct{ c Config }

func (s clusterService) dir() string        { return filepath.Join(s.c.Dir, "redis-cluster") }
func (s clusterService) layoutFile() string { return filepath.Join(s.dir(), "layout.json") }

// On a secure stack the nodes share the users of aclFile and log in to their masters as the
// admin user of replicationFile (0600, read as the nodes' configuration file: a password on
// redis-server's command line would show in ps).
func (s clusterService) aclFile() string         { return filepath.Join(s.dir(), "users.acl") }
func (s clusterService) replicationFile() string { return filepath.Join(s.dir(), "replication.conf") }
func (s clusterService) nodeDir(port int) string {
	return filepath.Join(s.dir(), strconv.Itoa(port))
}

// layout is the cluster this stack keeps: the one asked for, else the one remembered; ok is
// false when there is none.
func (s clusterService) layout() (ClusterLayout, bool, error) {
	var saved ClusterLayout
	b, err := os.ReadFile(s.layoutFile())
	switch {
	case err == nil:
		if err := json.Unmarshal(b, &saved); err != nil {
			return saved, false, fmt.Errorf("%s: %w", s.layoutFile(), err)
		}
	case !errors.Is(err, os.ErrNotExist):
		return saved, false, err
	}
	asked := s.c.RedisCluster
	switch {
	case asked.Masters == 0 && saved.Masters == 0:
		return saved, false, nil
	case asked.Masters == 0:
		return saved, true, nil
	case saved.Masters != 0 && saved != asked:
		return saved, false, fmt.Errorf("the local Redis Cluster has %d masters, %d replica(s) each, from port %d; to change it: fsctl stack down, then delete %s",
			saved.Masters, saved.Replicas, saved.Port, s.dir())
	}
	return asked, true, asked.validate()
}

func (s clusterService) status() ServiceStatus {
	l, _, _ := s.layout()
	st := ServiceStatus{Name: "redis-cluster", Address: strings.Join(l.Seeds(), ","), DataDir: s.dir(), Running: l.Nodes() > 0}
	for i := range l.Nodes() {
		pid, ok := pidFromFile(filepath.Join(s.nodeDir(l.Port+i), "redis.pid"), "redis-server")
		st.Running = st.Running && ok
		if i == 0 {
			st.PID = pid
			st.LogFile = filepath.Join(s.nodeDir(l.Port), "redis.log")
		}
	}
	return st
}

// nodeArgs is a node's whole configuration: on a secure stack TLS only, for clients, for the
// cluster bus and for replication, with the stack's users.
func (s clusterService) nodeArgs(port int) []string {
	d := s.nodeDir(port)
	var args []string
	if s.c.Secure {
		args = []string{s.replicationFile(), "--tls-cluster", "yes", "--tls-replication", "yes"}
	}
	return append(append(args, s.c.redisListen(port, s.aclFile())...),
		"--bind", "127.0.0.1",
		"--dir", d,
		"--pidfile", filepath.Join(d, "redis.pid"),
		"--logfile", filepath.Join(d, "redis.log"),
		"--appendonly", "yes",
		"--maxmemory-policy", "noeviction",
		"--daemonize", "yes",
		"--cluster-enabled", "yes",
		"--cluster-config-file", filepath.Join(d, "nodes.conf"),
		"--cluster-node-timeout", "2000",
		// A master lost with no replica strands only its own slots: the other masters keep
		// answering for theirs (so a hot item's other shards keep selling) instead of the whole
		// cluster refusing every key. redisconn.Check still refuses a cluster with a master down.
		"--cluster-require-full-coverage", "no",
		// A replica syncs at once rather than after Redis's default 5 s wait for more replicas.
		"--repl-diskless-sync-delay", "0",
	)
}

// writeSecrets writes a secure cluster's users and its nodes' login to their masters.
func (s clusterService) writeSecrets() error {
	if !s.c.Secure {
		return nil
	}
	if err := s.c.writeACL(s.aclFile()); err != nil {
		return err
	}
	admin, err := s.c.secrets().Password("redis-admin")
	if err != nil {
		return err
	}
	return writeSecret(s.replicationFile(), []byte("masteruser "+adminUser+"\nmasterauth "+admin+"\n"))
}

func (s clusterService) up(ctx context.Context, _ io.Writer) (int, bool, error) {
	l, ok, err := s.layout()
	if err != nil || !ok {
		return 0, false, err
	}
	if err := os.MkdirAll(s.dir(), 0o755); err != nil {
		return 0, false, err
	}
	b, _ := json.Marshal(l)
	if err := os.WriteFile(s.layoutFile(), b, 0o644); err != nil {
		return 0, false, err
	}
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		return 0, false, errors.New("redis-server not found on PATH; run `make deps` (apt-get install redis-server)")
	}
	if err := s.writeSecrets(); err != nil {
		return 0, false, err
	}
	started := false
	for i := range l.Nodes() {
		port := l.Port + i
		d := s.nodeDir(port)
		if _, ok := pidFromFile(filepath.Join(d, "redis.pid"), "redis-server"); ok {
			continue
		}
		if portTaken(port) || portTaken(port+10000) {
			return 0, false, fmt.Errorf("port %d (or its cluster bus %d) is taken by a process this stack did not start; stop it or pick another --redis-cluster-port", port, port+10000)
		}
		if err := os.MkdirAll(d, 0o755); err != nil {
			return 0, false, err
		}
		if _, err := runTool(ctx, d, bin, s.nodeArgs(port)...); err != nil {
			return 0, false, fmt.Errorf("node %d: %w\nlog:\n%s", port, err, tail(filepath.Join(d, "redis.log"), 20))
		}
		started = true
	}
	if err := s.form(ctx, l); err != nil {
		return 0, false, err
	}
	pid, _ := pidFromFile(filepath.Join(s.nodeDir(l.Port), "redis.pid"), "redis-server")
	return pid, started, nil
}

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
	for i := 1; i < len(nodes); i++ {
		if err := nodes[0].ClusterMeet(ctx, "127.0.0.1", strconv.Itoa(l.Port+i)).Err(); err != nil {
			return fmt.Errorf("CLUSTER MEET %d: %w", l.Port+i, err)
		}
	}
	if err := waitCluster(ctx, nodes, func(info string) bool { return infoValue(info, "cluster_known_nodes") == strconv.Itoa(len(nodes)) }); err != nil {
		return fmt.Errorf("the nodes did not meet: %w", err)
	}
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
	if err := waitCluster(ctx, nodes, func(info string) bool { return infoValue(info, "cluster_state") == "ok" }); err != nil {
		return fmt.Errorf("the cluster did not reach cluster_state:ok: %w", err)
	}
	// A replica that never synced cannot take over: wait until every one holds its master's data.
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
	return s.formed(ctx, nodes)
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

func (s clusterService) down(ctx context.Context) error {
	l, ok, _ := s.layout()
	if !ok {
		return nil
	}
	var errs []error
	for i := range l.Nodes() {
		pidFile := filepath.Join(s.nodeDir(l.Port+i), "redis.pid")
		pid, ok := pidFromFile(pidFile, "redis-server")
		if !ok {
			continue
		}
		if err := stopPID(ctx, pid, "redis-server", 20*time.Second); err != nil {
			errs = append(errs, fmt.Errorf("node %d: %w", l.Port+i, err))
			continue
		}
		_ = os.Remove(pidFile)
	}
	return errors.Join(errs...)
}

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

// Layout is the local cluster this stack keeps (asked for in cfg, else remembered); ok is false
// when it keeps none.
func Layout(cfg Config) (ClusterLayout, bool, error) {
	c, err := cfg.withDefaults()
	if err != nil {
		return ClusterLayout{}, false, err
	}
	return clusterService{c}.layout()
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
