package stack

import (
	"context"
	"io"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestLocalClusterWithReplicas starts a cluster of 3 masters with a replica each in a folder of its
// own (ports 17100 up, clear of the shared stack's, and with the bus ports below Linux's ephemeral
// range, 32768 up, so no client socket takes one), checks the roles and slots, starts it again
// (only probed), and stops every node.
func TestLocalClusterWithReplicas(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test; run without -short")
	}
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Fatal("redis-server not found: run `make deps`")
	}
	c, err := Config{Dir: t.TempDir(), RedisPort: 36379, PostgresPort: 35432, KafkaPort: 39092, KafkaControllerPort: 39093,
		RedisCluster: ClusterLayout{Masters: 3, Replicas: 1, Port: 17100}}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	s := clusterService{c}
	t.Cleanup(func() { _ = s.down(context.Background()) })
	if _, started, err := s.up(ctx, io.Discard); err != nil || !started {
		t.Fatalf("up: started %v, %v", started, err)
	}
	nodes, err := ClusterNodes(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	var masters, replicas []string
	for _, n := range nodes {
		switch n.Role {
		case "master":
			masters = append(masters, strings.Join(n.Slots, " "))
		case "replica":
			replicas = append(replicas, n.MasterOf)
		}
	}
	if strings.Join(masters, ",") != "0-5460,5461-10921,10922-16383" || len(replicas) != 3 {
		t.Fatalf("nodes %+v: want 3 masters over every slot and 3 replicas", nodes)
	}
	if _, started, err := s.up(ctx, io.Discard); err != nil || started {
		t.Fatalf("second up: started %v, %v; want only a probe", started, err)
	}
	if !s.status().Running {
		t.Fatalf("status %+v", s.status())
	}
	// Another layout over the remembered one is refused with what to do.
	other := c
	other.RedisCluster.Masters = 4
	if _, _, err := (clusterService{other}).layout(); err == nil || !strings.Contains(err.Error(), "to change it: fsctl stack down") {
		t.Fatalf("a different layout: %v", err)
	}
	if err := s.down(ctx); err != nil {
		t.Fatal(err)
	}
	if s.status().Running {
		t.Fatal("nodes still running after down")
	}
}
