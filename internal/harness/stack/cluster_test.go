package stack

import (
	"context"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/fsctl/fsctl/internal/platform/redisconn"
)

// TestLocalClusterWithReplicas starts a cluster of 3 masters with a replica each in a folder of its
// own (ports 17100 up, clear of the shared stack's, and with the bus ports below Linux's ephemeral
// range, 32768 up, so no client socket takes one), checks the roles and slots, starts it again
// (only probed), and stops every node.
func TestLocalClusterWithReplicas(t *testing.T) {
	ctx, c, s := privateCluster(t, ClusterLayout{Masters: 3, Replicas: 1, Port: 17100})
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
	// A master killed with SIGKILL: its replica takes its slots over, the cluster is ok again,
	// and the old master, started again, rejoins as a replica.
	failoverAndRejoin(t, ctx, c, nodes)
	// The stack survives its own failover: stopped and started twice, it keeps the roles the
	// cluster has now (the promoted replica stays a master) and serves keys on every slot.
	for i := range 2 {
		if err := s.down(ctx); err != nil {
			t.Fatal(err)
		}
		if _, started, err := s.up(ctx, io.Discard); err != nil || !started {
			t.Fatalf("up %d after the failover: started %v, %v", i+1, started, err)
		}
	}
	client, err := redisconn.Open(c.RedisCluster.URL(false), redisconn.Tune{MaxRetries: 3, DialTimeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	for _, key := range []string{keyOn(t, 0, 5461), keyOn(t, 5461, 10922), keyOn(t, 10922, 16384)} {
		if err := client.Set(ctx, key, "1", 0).Err(); err != nil {
			t.Errorf("after the failover and two restarts, SET %s: %v", key, err)
		}
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

func failoverAndRejoin(t *testing.T, ctx context.Context, c Config, nodes []ClusterNode) {
	t.Helper()
	victim := nodes[0]
	if _, err := KillClusterNode(ctx, c, victim.Address); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	var promoted string
	err := waitReady(ctx, 30*time.Second, func() error { return nil }, func(ctx context.Context) error {
		now, err := ClusterNodes(ctx, c)
		if err != nil {
			return err
		}
		for _, n := range now {
			if n.Role == "master" && n.Address != victim.Address && strings.Join(n.Slots, " ") == strings.Join(victim.Slots, " ") {
				promoted = n.Address
				return nil
			}
		}
		return fmt.Errorf("no replica has taken %v over yet: %+v", victim.Slots, now)
	})
	if err != nil {
		t.Fatalf("failover: %v", err)
	}
	t.Logf("master %s killed: replica %s took its slots over after %s", victim.Address, promoted, time.Since(killed).Round(100*time.Millisecond))
	if _, err := StartClusterNode(ctx, c, victim.Address); err != nil {
		t.Fatal(err)
	}
	restarted := time.Now()
	err = waitReady(ctx, 30*time.Second, func() error { return nil }, func(ctx context.Context) error {
		now, err := ClusterNodes(ctx, c)
		if err != nil {
			return err
		}
		for _, n := range now {
			if n.Address == victim.Address && n.Role == "replica" && n.MasterOf == promoted {
				return nil
			}
		}
		return fmt.Errorf("%s has not rejoined as a replica of %s: %+v", victim.Address, promoted, now)
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s started again: a replica of %s after %s", victim.Address, promoted, time.Since(restarted).Round(100*time.Millisecond))
}

// TestLocalClusterMasterLost: with no replica, a killed master takes its slots away: the other
// nodes say cluster_state:fail, redisconn.Check refuses the cluster with that, and the master
// started again brings it back to ok.
func TestLocalClusterMasterLost(t *testing.T) {
	ctx, c, _ := privateCluster(t, ClusterLayout{Masters: 3, Port: 17200})
	client, err := redisconn.Open(c.RedisCluster.URL(false), redisconn.Tune{MaxRetries: -1, DialTimeout: 500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	if err := redisconn.Check(ctx, client); err != nil {
		t.Fatalf("a healthy cluster: %v", err)
	}
	if _, err := KillClusterNode(ctx, c, "127.0.0.1:17201"); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	err = waitReady(ctx, 30*time.Second, func() error { return nil }, func(ctx context.Context) error {
		err := redisconn.Check(ctx, client)
		if err != nil && strings.Contains(err.Error(), "127.0.0.1:17201") {
			return nil
		}
		return fmt.Errorf("Check still says %v", err)
	})
	if err != nil {
		t.Fatalf("a cluster without one of its masters: %v", err)
	}
	t.Logf("master killed without a replica: Check refuses the cluster, naming the node, after %s", time.Since(killed).Round(100*time.Millisecond))
	// Only the lost master's slots are stranded: a key on another master still answers.
	var live, lost string
	if lost = keyOn(t, 5461, 10922); lost == "" {
		t.Fatal("no key on the second master")
	}
	if live = keyOn(t, 10923, 16384); live == "" {
		t.Fatal("no key on the third master")
	}
	err = waitReady(ctx, 10*time.Second, func() error { return nil }, func(ctx context.Context) error { return client.Set(ctx, live, 1, 0).Err() })
	if err != nil {
		t.Errorf("a key on a live master (%s): %v; want it served while another master is down", live, err)
	}
	if err := client.Set(ctx, lost, 1, 0).Err(); err == nil {
		t.Errorf("a key on the lost master (%s) was written", lost)
	}
	if _, err := StartClusterNode(ctx, c, "127.0.0.1:17201"); err != nil {
		t.Fatal(err)
	}
	if err := waitReady(ctx, 30*time.Second, func() error { return nil }, func(ctx context.Context) error { return redisconn.Check(ctx, client) }); err != nil {
		t.Fatalf("after the master came back: %v", err)
	}
}

// privateCluster starts a local cluster of layout in a folder of the test's own, stopped when the
// test ends, and returns a context bounding the test with it.
func privateCluster(t *testing.T, layout ClusterLayout) (context.Context, Config, clusterService) {
	t.Helper()
	return privateStackCluster(t, Config{RedisCluster: layout})
}

// privateStackCluster is privateCluster for a stack like base (a secure one: its certificates and
// passwords made first).
func privateStackCluster(t *testing.T, base Config) (context.Context, Config, clusterService) {
	t.Helper()
	if testing.Short() {
		t.Skip("integration test; run without -short")
	}
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Fatal("redis-server not found: run `make deps`")
	}
	c, err := Config{Dir: t.TempDir(), RedisPort: 36379, PostgresPort: 35432, KafkaPort: 39092, KafkaControllerPort: 39093,
		RedisCluster: base.RedisCluster, Secure: base.Secure}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	if c.Secure {
		if _, err := c.secrets().ensure(false, io.Discard); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	s := clusterService{c}
	t.Cleanup(func() { _ = s.down(context.Background()) })
	if _, started, err := s.up(ctx, io.Discard); err != nil || !started {
		t.Fatalf("up: started %v, %v", started, err)
	}
	return ctx, c, s
}

// keyOn is a key whose slot is in [lo, hi).
func keyOn(t *testing.T, lo, hi int) string {
	t.Helper()
	for i := range 100000 {
		k := fmt.Sprintf("{k%d}", i)
		if s := redisconn.KeySlot(k); s >= lo && s < hi {
			return k
		}
	}
	return ""
}

// TestSecureClusterSpeaksOnlyTLS: a secure stack's Redis Cluster is TLS-only for clients, for its
// bus and for replication, with the stack's users: a plaintext client and the default user are
// refused, the checkout's user reaches every master through rediss+cluster:// and no key outside
// the sale's, replicas sync over TLS, and a master killed is replaced by its replica and rejoins,
// all through the stack's own TLS admin login.
func TestSecureClusterSpeaksOnlyTLS(t *testing.T) {
	ctx, c, _ := privateStackCluster(t, Config{Secure: true, RedisCluster: ClusterLayout{Masters: 3, Replicas: 1, Port: 18200}})
	nodes, err := ClusterNodes(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	roles := map[string]int{}
	for _, n := range nodes {
		roles[n.Role]++
	}
	if roles["master"] != 3 || roles["replica"] != 3 {
		t.Fatalf("nodes %+v: want 3 masters and 3 replicas, read over TLS", nodes)
	}
	admin, err := c.redisAdmin(nodes[0].Address)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	for param, want := range map[string]string{"port": "0", "tls-port": "18200", "tls-cluster": "yes", "tls-replication": "yes"} {
		if got, err := admin.ConfigGet(ctx, param).Result(); err != nil || got[param] != want {
			t.Errorf("CONFIG GET %s: %v %v, want %s", param, got, err, want)
		}
	}
	plain := redis.NewClient(&redis.Options{Addr: nodes[0].Address, MaxRetries: -1, DialTimeout: time.Second, ReadTimeout: time.Second})
	defer plain.Close()
	if err := plain.Ping(ctx).Err(); err == nil {
		t.Error("a plaintext PING was answered")
	}

	e := c.Endpoints()
	pw, err := c.secrets().Password("redis")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(e.RedisClusterURL, "rediss+cluster://127.0.0.1:18200,") {
		t.Fatalf("cluster URL %s", e.RedisClusterURL)
	}
	t.Setenv(redisconn.EnvCA, e.Credentials.CA)
	t.Setenv(redisconn.EnvUser, SecureUser)
	t.Setenv(redisconn.EnvPassword, pw)
	client, err := redisconn.Open(e.RedisClusterURL, redisconn.Tune{MaxRetries: 2, DialTimeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	for _, key := range []string{saleKeyOn(t, 0, 5461), saleKeyOn(t, 5461, 10922), saleKeyOn(t, 10922, 16384)} {
		if err := client.Set(ctx, key, "1", 0).Err(); err != nil {
			t.Errorf("SET %s as %s: %v", key, SecureUser, err)
		}
	}
	if err := client.Set(ctx, "not-a-sale-key", "1", 0).Err(); err == nil || !strings.Contains(err.Error(), "NOPERM") {
		t.Errorf("a key outside the sale's: %v, want NOPERM", err)
	}
	failoverAndRejoin(t, ctx, c, nodes)
}

// saleKeyOn is a key of the sale's hash tags whose slot is in [lo, hi).
func saleKeyOn(t *testing.T, lo, hi int) string {
	t.Helper()
	for i := range 100000 {
		if k := fmt.Sprintf("{fs:%d}:stock", i); redisconn.KeySlot(k) >= lo && redisconn.KeySlot(k) < hi {
			return k
		}
	}
	t.Fatalf("no key in slots [%d, %d)", lo, hi)
	return ""
}
