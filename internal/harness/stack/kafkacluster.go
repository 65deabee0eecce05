package stack

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// KafkaLayout is the local replicated Kafka: Brokers KRaft nodes, each broker and controller in one
// JVM, broker i on Port+i and its controller on Port+100+i, all voters of one quorum. Topics get
// replication factor 3 (at most Brokers) and min.insync.replicas 2, so acks=all means what it says.
type KafkaLayout struct {
	Brokers int `json:"brokers"`
	Port    int `json:"port"`
}

// DefaultKafkaClusterPort is the first broker's port of the local Kafka cluster; a secure
// stack's starts at DefaultSecureKafkaClusterPort, so both stacks may keep one.
const (
	DefaultKafkaClusterPort       = 19200
	DefaultSecureKafkaClusterPort = 19500
)

// DefaultKafkaLayout is the local Kafka cluster `fsctl stack up --kafka-cluster 3` starts.
var DefaultKafkaLayout = KafkaLayout{Brokers: 3, Port: DefaultKafkaClusterPort}

// Addrs are the brokers' addresses, the cluster's address for a client.
func (l KafkaLayout) Addrs() []string {
	out := make([]string, l.Brokers)
	for i := range out {
		out[i] = fmt.Sprintf("127.0.0.1:%d", l.Port+i)
	}
	return out
}

func (l KafkaLayout) validate() error {
	switch {
	case l.Brokers < 3 || l.Brokers > 9:
		return fmt.Errorf("--kafka-cluster %d: a replicated Kafka needs 3 to 9 brokers (replication factor 3, min.insync.replicas 2)", l.Brokers)
	case l.Port <= 0 || l.Port+100+l.Brokers > 32768:
		return fmt.Errorf("--kafka-cluster-port %d: the brokers and their controllers (port + 100) must stay below Linux's ephemeral ports (32768)", l.Port)
	}
	return nil
}

// kafkaClusterService is the local replicated Kafka as one service of the stack. Like the Redis
// Cluster it exists once asked for and is remembered in layout.json, with the KRaft cluster id
// every node was formatted with.
type kafkaClusterService struct{ c Config }

type kafkaClusterFile struct {
	KafkaLayout
	ClusterID string `json:"clusterId"`
}

func (s kafkaClusterService) dir() string        { return filepath.Join(s.c.Dir, "kafka-cluster") }
func (s kafkaClusterService) layoutFile() string { return filepath.Join(s.dir(), "layout.json") }

func (s kafkaClusterService) saved() (kafkaClusterFile, error) {
	var f kafkaClusterFile
	b, err := os.ReadFile(s.layoutFile())
	if errors.Is(err, os.ErrNotExist) {
		return f, nil
	}
	if err == nil {
		err = json.Unmarshal(b, &f)
	}
	if err != nil {
		return f, fmt.Errorf("%s: %w", s.layoutFile(), err)
	}
	return f, nil
}

// layout is the cluster this stack keeps: the one asked for, else the one remembered.
func (s kafkaClusterService) layout() (KafkaLayout, bool, error) {
	saved, err := s.saved()
	if err != nil {
		return KafkaLayout{}, false, err
	}
	asked := s.c.KafkaCluster
	switch {
	case asked.Brokers == 0 && saved.Brokers == 0:
		return KafkaLayout{}, false, nil
	case asked.Brokers == 0:
		return saved.KafkaLayout, true, nil
	case saved.Brokers != 0 && saved.KafkaLayout != asked:
		return saved.KafkaLayout, false, fmt.Errorf("the local Kafka cluster has %d brokers from port %d; to change it: fsctl stack down, then delete %s",
			saved.Brokers, saved.Port, s.dir())
	}
	return asked, true, asked.validate()
}

func (s kafkaClusterService) nodes(l KafkaLayout) []kafkaNode {
	voters := make([]string, l.Brokers)
	for i := range voters {
		voters[i] = fmt.Sprintf("%d@127.0.0.1:%d", i+1, l.Port+100+i)
	}
	out := make([]kafkaNode, l.Brokers)
	for i := range out {
		out[i] = kafkaNode{c: s.c, name: "kafka-cluster", dir: filepath.Join(s.dir(), strconv.Itoa(i+1)), id: i + 1,
			port: l.Port + i, controllerPort: l.Port + 100 + i, voters: strings.Join(voters, ","), brokers: l.Brokers}
	}
	return out
}

func (s kafkaClusterService) status() ServiceStatus {
	l, _, _ := s.layout()
	st := ServiceStatus{Name: "kafka-cluster", Address: strings.Join(l.Addrs(), ","), DataDir: s.dir(), Running: l.Brokers > 0}
	for i, n := range s.nodes(l) {
		ns := n.status()
		st.Running = st.Running && ns.Running
		if i == 0 {
			st.PID, st.LogFile = ns.PID, ns.LogFile
		}
	}
	return st
}

// up starts every broker that is not running, all at once (a quorum needs a majority of its voters
// before any of them is ready), and waits until each lists every broker.
func (s kafkaClusterService) up(ctx context.Context, log io.Writer) (int, bool, error) {
	l, ok, err := s.layout()
	if err != nil || !ok {
		return 0, false, err
	}
	f, err := s.saved()
	if err != nil {
		return 0, false, err
	}
	if f.ClusterID == "" {
		if f.ClusterID, err = newClusterID(); err != nil {
			return 0, false, err
		}
	}
	f.KafkaLayout = l
	if err := os.MkdirAll(s.dir(), 0o755); err != nil {
		return 0, false, err
	}
	b, _ := json.Marshal(f)
	if err := os.WriteFile(s.layoutFile(), b, 0o644); err != nil {
		return 0, false, err
	}
	nodes := s.nodes(l)
	pids, started, errs := make([]int, len(nodes)), make([]bool, len(nodes)), make([]error, len(nodes))
	var wg sync.WaitGroup
	for i, n := range nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			pids[i], started[i], errs[i] = n.up(ctx, log, f.ClusterID)
			if errs[i] != nil {
				errs[i] = fmt.Errorf("broker %d (%s): %w", n.id, n.addr(), errs[i])
			}
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return 0, false, err
	}
	any := false
	for _, st := range started {
		any = any || st
	}
	return pids[0], any, nil
}

func (s kafkaClusterService) down(ctx context.Context) error {
	l, _, err := s.layout()
	if err != nil {
		return err
	}
	nodes := s.nodes(l)
	errs := make([]error, len(nodes))
	var wg sync.WaitGroup
	for i, n := range nodes {
		wg.Add(1)
		go func() { defer wg.Done(); errs[i] = n.down(ctx) }()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// KafkaClusterLayout is the local Kafka cluster this stack keeps (asked for in cfg, else
// remembered); ok is false when it keeps none.
func KafkaClusterLayout(cfg Config) (KafkaLayout, bool, error) {
	c, err := cfg.withDefaults()
	if err != nil {
		return KafkaLayout{}, false, err
	}
	return kafkaClusterService{c}.layout()
}

// kafkaBroker finds one broker of the local Kafka cluster by its address.
func kafkaBroker(cfg Config, addr string) (kafkaNode, error) {
	c, err := cfg.withDefaults()
	if err != nil {
		return kafkaNode{}, err
	}
	s := kafkaClusterService{c}
	l, ok, err := s.layout()
	if err != nil {
		return kafkaNode{}, err
	}
	if !ok {
		return kafkaNode{}, errors.New("this stack keeps no Kafka cluster: start one with fsctl stack up --kafka-cluster 3")
	}
	for _, n := range s.nodes(l) {
		if n.addr() == addr {
			return n, nil
		}
	}
	return kafkaNode{}, fmt.Errorf("%s is not a broker of the local Kafka cluster (%s)", addr, strings.Join(l.Addrs(), ","))
}

// KillKafkaBroker kills one broker of the local Kafka cluster with SIGKILL, as a crash would, and
// waits until it is gone; it returns the pid, or ErrNotRunning.
func KillKafkaBroker(ctx context.Context, cfg Config, addr string) (int, error) {
	pid, err := SignalKafkaBroker(cfg, addr, syscall.SIGKILL)
	if err != nil {
		return pid, err
	}
	if !waitGone(ctx, pid, 10*time.Second) {
		return pid, fmt.Errorf("kafka broker %s (pid %d) still alive 10s after SIGKILL", addr, pid)
	}
	n, _ := kafkaBroker(cfg, addr)
	_ = os.Remove(n.pidFile())
	return pid, nil
}

// SignalKafkaBroker sends sig to one broker of the local Kafka cluster: SIGSTOP freezes it (it
// keeps its leadership until its session with the controller times out), SIGCONT thaws it. It
// returns the pid, or ErrNotRunning.
func SignalKafkaBroker(cfg Config, addr string, sig syscall.Signal) (int, error) {
	n, err := kafkaBroker(cfg, addr)
	if err != nil {
		return 0, err
	}
	pid, ok := pidFromFile(n.pidFile(), kafkaMain)
	if !ok {
		return 0, fmt.Errorf("signal kafka broker %s: %w", addr, ErrNotRunning)
	}
	if err := syscall.Kill(pid, sig); err != nil {
		return pid, fmt.Errorf("signal %d to kafka broker %s (pid %d): %w", sig, addr, pid, err)
	}
	return pid, nil
}

// StartKafkaBroker starts a stopped broker of the local Kafka cluster again with its data, so it
// rejoins and catches up, and waits until it lists every broker; it returns the new pid.
func StartKafkaBroker(ctx context.Context, cfg Config, addr string) (int, error) {
	n, err := kafkaBroker(cfg, addr)
	if err != nil {
		return 0, err
	}
	pid, _, err := n.up(ctx, n.c.Log, "")
	if err != nil {
		return 0, fmt.Errorf("start kafka broker %s: %w", addr, err)
	}
	return pid, nil
}
