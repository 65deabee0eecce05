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
	"strconv"
	"strings"
	"time"
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

// Layout is the local cluster this stack keeps (asked for in cfg, else remembered); ok is false
// when it keeps none.
func Layout(cfg Config) (ClusterLayout, bool, error) {
	c, err := cfg.withDefaults()
	if err != nil {
		return ClusterLayout{}, false, err
	}
	return clusterService{c}.layout()
}
