package stack

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestStatusOfRunningStack checks Status against the stack `make stack-up` started from the
// repository root (or $FSCTL_STACK_DIR).
func TestStatusOfRunningStack(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test; run without -short")
	}
	cfg := Config{Dir: os.Getenv(EnvStackDir)}
	if cfg.Dir == "" {
		cfg.Dir = filepath.Join("..", "..", "..", ".stack")
	}
	statuses, err := Status(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	// make test starts the local Redis Cluster and the replicated Kafka beside the single nodes.
	want := []string{"redis", "postgres", "kafka", "redis-cluster", "kafka-cluster"}
	if len(statuses) != len(want) {
		t.Fatalf("got %d services, want %d", len(statuses), len(want))
	}
	for i, s := range statuses {
		if s.Name != want[i] {
			t.Errorf("service %d is %q, want %q", i, s.Name, want[i])
		}
		if !s.Running || s.PID <= 0 {
			t.Errorf("%s at %s is not running (pid %d); start the local stack with `make stack-up`", s.Name, s.Address, s.PID)
		}
		if s.LogFile == "" || s.DataDir == "" {
			t.Errorf("%s: empty paths %+v", s.Name, s)
		}
	}
	nodes, err := ClusterNodes(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	var slots []string
	for _, n := range nodes {
		if n.Role == "master" {
			slots = append(slots, n.Slots...)
		}
	}
	if len(nodes) < 3 || strings.Join(slots, " ") != "0-5460 5461-10921 10922-16383" {
		t.Errorf("cluster nodes %+v: want 3 masters owning every slot", nodes)
	}
}
