package stack

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRecordIsTheStacksOwnPorts: a folder's record fills the ports a command leaves out, a port
// that differs from it is refused with the commands that move the stack, and a folder without one
// keeps the defaults.
func TestRecordIsTheStacksOwnPorts(t *testing.T) {
	dir := t.TempDir()
	c, err := Resolve(Config{Dir: dir})
	if err != nil || c.RedisPort != DefaultRedisPort || c.PostgresPort != DefaultPostgresPort {
		t.Fatalf("a folder without a record: %+v, %v; want the default ports", c, err)
	}
	started := Config{Dir: dir, RedisPort: 26379, PostgresPort: 25432, KafkaPort: 29092, KafkaControllerPort: 29093}
	started, err = Resolve(started)
	if err != nil {
		t.Fatal(err)
	}
	if err := started.writeRecord(); err != nil {
		t.Fatal(err)
	}
	got, err := Resolve(Config{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if got.RedisPort != 26379 || got.PostgresPort != 25432 || got.KafkaPort != 29092 || got.KafkaControllerPort != 29093 {
		t.Errorf("ports left out: %+v, want the recorded ones", got)
	}
	if e := got.Endpoints(); e.RedisURL != "redis://127.0.0.1:26379/0" || !strings.Contains(e.PostgresURL, ":25432/") || e.KafkaBrokers[0] != "127.0.0.1:29092" {
		t.Errorf("endpoints %+v name another stack", e)
	}
	if _, err := Resolve(Config{Dir: dir, RedisPort: 26379}); err != nil {
		t.Errorf("the recorded port given again: %v", err)
	}
	_, err = Resolve(Config{Dir: dir, PostgresPort: 15432})
	if err == nil {
		t.Fatal("a port other than the recorded one was accepted")
	}
	for _, want := range []string{"--postgres-port 25432, not 15432", "fsctl stack down --dir " + dir, "rm " + filepath.Join(dir, RecordFile)} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the refusal %q does not say %q", err, want)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, RecordFile), []byte("{"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Resolve(Config{Dir: dir}); err == nil || !strings.Contains(err.Error(), RecordFile) {
		t.Errorf("a broken record: %v, want an error naming it", err)
	}
}

// TestSecureStackHoldsNoPlaintextCluster: a secure stack's Redis Cluster and replicated Kafka
// listen only over TLS (SASL_SSL between brokers too), on ports clear of the plain stack's, and
// no password is on a node's command line (ps shows it).
func TestSecureStackHoldsNoPlaintextCluster(t *testing.T) {
	rc, err := Resolve(Config{Dir: t.TempDir(), Secure: true, RedisCluster: ClusterLayout{Masters: 3}})
	if err != nil {
		t.Fatal(err)
	}
	if rc.RedisCluster.Port != DefaultSecureRedisClusterPort {
		t.Errorf("a secure stack's cluster on port %d, want %d", rc.RedisCluster.Port, DefaultSecureRedisClusterPort)
	}
	args := strings.Join(clusterService{rc}.nodeArgs(rc.RedisCluster.Port), " ")
	for _, want := range []string{"--port 0 --tls-port 16400", "--tls-cluster yes", "--tls-replication yes", "--aclfile"} {
		if !strings.Contains(args, want) {
			t.Errorf("a secure cluster node's arguments %q lack %q", args, want)
		}
	}
	if strings.Contains(args, "masterauth") || strings.Contains(args, "requirepass") {
		t.Errorf("a password on the command line: %s", args)
	}
	c, err := Resolve(Config{Dir: t.TempDir(), Secure: true, KafkaCluster: KafkaLayout{Brokers: 3}})
	if err != nil {
		t.Fatal(err)
	}
	if c.KafkaCluster.Port != DefaultSecureKafkaClusterPort {
		t.Errorf("a secure stack's Kafka cluster on port %d, want %d", c.KafkaCluster.Port, DefaultSecureKafkaClusterPort)
	}
	node := kafkaClusterService{c}.nodes(c.KafkaCluster)[0]
	if props := node.properties(); !strings.Contains(props, "listeners=SASL_SSL://") || strings.Contains(props, "PLAINTEXT://127") {
		t.Errorf("a secure cluster broker's listeners:\n%s", props)
	}
}
