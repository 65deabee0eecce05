package stack

import (
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite golden files in testdata/")

func TestEndpointsFrom(t *testing.T) {
	tests := []struct {
		name string
		env  map[string]string
		want Endpoints
	}{
		{"defaults", nil, Endpoints{
			RedisURL:            "redis://127.0.0.1:16379/0",
			PostgresURL:         "postgres://fsctl@127.0.0.1:15432/fsctl?sslmode=disable",
			KafkaBrokers:        []string{"127.0.0.1:19092"},
			RedisClusterURL:     "redis+cluster://127.0.0.1:17000,127.0.0.1:17001,127.0.0.1:17002",
			KafkaClusterBrokers: []string{"127.0.0.1:19200", "127.0.0.1:19201", "127.0.0.1:19202"},
		}},
		{"overrides", map[string]string{
			EnvRedisURL:            "redis://r:6379/2",
			EnvPostgresURL:         " postgres://u@p:5432/db ",
			EnvKafkaBrokers:        "k1:9092, k2:9092,,",
			EnvRedisClusterURL:     "redis+cluster://c1:7000,c2:7000",
			EnvKafkaClusterBrokers: "c1:9092,c2:9092,c3:9092",
		}, Endpoints{
			RedisURL:            "redis://r:6379/2",
			PostgresURL:         "postgres://u@p:5432/db",
			KafkaBrokers:        []string{"k1:9092", "k2:9092"},
			RedisClusterURL:     "redis+cluster://c1:7000,c2:7000",
			KafkaClusterBrokers: []string{"c1:9092", "c2:9092", "c3:9092"},
		}},
		{"blank values keep defaults", map[string]string{EnvRedisURL: " ", EnvKafkaBrokers: " , "}, DefaultEndpoints()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := endpointsFrom(func(k string) (string, bool) { v, ok := tt.env[k]; return v, ok })
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestEndpointsFromEnv(t *testing.T) {
	t.Setenv(EnvKafkaBrokers, "a:1,b:2")
	t.Setenv(EnvRedisURL, "")
	got := EndpointsFromEnv()
	if !reflect.DeepEqual(got.KafkaBrokers, []string{"a:1", "b:2"}) || got.RedisURL != DefaultEndpoints().RedisURL {
		t.Errorf("got %+v", got)
	}
}

func TestConfigEndpointsFollowPorts(t *testing.T) {
	e := Config{RedisPort: 1, PostgresPort: 2, KafkaPort: 3, KafkaControllerPort: 4}.Endpoints()
	want := Endpoints{RedisURL: "redis://127.0.0.1:1/0", PostgresURL: "postgres://fsctl@127.0.0.1:2/fsctl?sslmode=disable", KafkaBrokers: []string{"127.0.0.1:3"}}
	if !reflect.DeepEqual(e, want) {
		t.Errorf("got %+v, want %+v", e, want)
	}
	e = Config{RedisCluster: ClusterLayout{Masters: 3, Port: 17000}}.Endpoints()
	if e.RedisClusterURL != "redis+cluster://127.0.0.1:17000,127.0.0.1:17001,127.0.0.1:17002" {
		t.Errorf("cluster url %q", e.RedisClusterURL)
	}
}

// TestClusterLayoutRefusesWhatIsNoCluster: fewer than 3 masters, too many replicas, ports that do
// not fit, and nodes on another service's port are each an error naming the flag.
func TestClusterLayoutRefusesWhatIsNoCluster(t *testing.T) {
	for _, tc := range []struct {
		l    ClusterLayout
		want string
	}{
		{ClusterLayout{Masters: 2, Port: 17000}, "at least 3 masters"},
		{ClusterLayout{Masters: 3, Replicas: 4, Port: 17000}, "0 to 3 replicas"},
		{ClusterLayout{Masters: 3, Port: 60000}, "must fit below 65536"},
		{ClusterLayout{Masters: 3, Port: 30000}, "ephemeral ports"},
		{ClusterLayout{Masters: 3, Port: 16378}, "both on port 16379"},
	} {
		_, err := Config{Dir: t.TempDir(), RedisCluster: tc.l}.withDefaults()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want %q", tc.l, err, tc.want)
		}
	}
}

func TestDefaultConfig(t *testing.T) {
	dir := t.TempDir()
	t.Setenv(EnvStackDir, dir)
	c := DefaultConfig()
	if c.Dir != dir || c.KafkaLibs != filepath.Join(dir, "kafka", "libs") {
		t.Errorf("dir %q libs %q", c.Dir, c.KafkaLibs)
	}
	if c.RedisPort != 16379 || c.PostgresPort != 15432 || c.KafkaPort != 19092 || c.KafkaControllerPort != 19093 {
		t.Errorf("ports %+v", c)
	}
	t.Setenv(EnvStackDir, "")
	wd, _ := os.Getwd()
	if got := DefaultConfig().Dir; got != filepath.Join(wd, ".stack") {
		t.Errorf("default dir %q", got)
	}
}

func TestWithDefaults(t *testing.T) {
	c, err := Config{Dir: "rel"}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	if !filepath.IsAbs(c.Dir) || c.KafkaLibs != filepath.Join(c.Dir, "kafka", "libs") || c.RedisPort != DefaultRedisPort || c.Log == nil {
		t.Errorf("got %+v", c)
	}
	bad := []Config{
		{Dir: "x", RedisPort: 15432},                           // collides with the default postgres port
		{Dir: "x", KafkaPort: 70000},                           // out of range
		{Dir: "x", KafkaPort: 9000, KafkaControllerPort: 9000}, // broker and controller share a port
	}
	for _, b := range bad {
		if _, err := b.withDefaults(); err == nil {
			t.Errorf("%+v: want an error", b)
		}
	}
}

func TestKafkaPropertiesGolden(t *testing.T) {
	got := kafkaService{Config{Dir: "/stack", KafkaPort: 19092, KafkaControllerPort: 19093}}.node().properties()
	golden(t, "server.properties.golden", got)
	for _, want := range []string{"controller.quorum.voters=1@127.0.0.1:19093", "auto.create.topics.enable=false", "advertised.listeners=PLAINTEXT://127.0.0.1:19092"} {
		if !strings.Contains(got, want+"\n") {
			t.Errorf("properties lack %q", want)
		}
	}
}

// TestKafkaClusterProperties: every node of the replicated Kafka is a voter of one quorum, and its
// topics replicate three ways with two in-sync replicas required, internal topics included.
func TestKafkaClusterProperties(t *testing.T) {
	s := kafkaClusterService{Config{Dir: "/stack"}}
	nodes := s.nodes(KafkaLayout{Brokers: 3, Port: 19200})
	if len(nodes) != 3 {
		t.Fatalf("%d nodes", len(nodes))
	}
	got := nodes[1].properties()
	golden(t, "server-cluster-2.properties.golden", got)
	for _, want := range []string{"node.id=2", "controller.quorum.voters=1@127.0.0.1:19300,2@127.0.0.1:19301,3@127.0.0.1:19302",
		"listeners=PLAINTEXT://127.0.0.1:19201,CONTROLLER://127.0.0.1:19301", "default.replication.factor=3", "min.insync.replicas=2",
		"offsets.topic.replication.factor=3", "transaction.state.log.min.isr=2", "log.dirs=/stack/kafka-cluster/2/data"} {
		if !strings.Contains(got, want+"\n") {
			t.Errorf("broker 2's properties lack %q", want)
		}
	}
	for _, bad := range []KafkaLayout{{Brokers: 2, Port: 19200}, {Brokers: 10, Port: 19200}, {Brokers: 3, Port: 32700}} {
		if err := bad.validate(); err == nil {
			t.Errorf("%+v: want an error", bad)
		}
	}
	if _, err := (Config{KafkaCluster: KafkaLayout{Brokers: 3, Port: 19092}}).withDefaults(); err == nil {
		t.Error("a Kafka cluster on the single broker's port: want an error")
	}
}

// TestKafkaClusterLayoutIsRemembered: a later call without --kafka-cluster keeps the cluster, and a
// different layout is refused with how to change it.
func TestKafkaClusterLayoutIsRemembered(t *testing.T) {
	dir := t.TempDir()
	s := kafkaClusterService{Config{Dir: dir, KafkaCluster: KafkaLayout{Brokers: 3, Port: 19200}}}
	if err := os.MkdirAll(s.dir(), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(s.layoutFile(), []byte(`{"brokers":3,"port":19200,"clusterId":"x"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if l, ok, err := (kafkaClusterService{Config{Dir: dir}}).layout(); err != nil || !ok || l != (KafkaLayout{Brokers: 3, Port: 19200}) {
		t.Fatalf("remembered layout = %+v %v %v", l, ok, err)
	}
	if _, _, err := (kafkaClusterService{Config{Dir: dir, KafkaCluster: KafkaLayout{Brokers: 5, Port: 19200}}}).layout(); err == nil ||
		!strings.Contains(err.Error(), "has 3 brokers from port 19200; to change it: fsctl stack down, then delete") {
		t.Fatalf("a different layout: %v", err)
	}
	if _, ok, err := (kafkaClusterService{Config{Dir: t.TempDir()}}).layout(); ok || err != nil {
		t.Fatalf("no layout asked or saved: ok=%v %v", ok, err)
	}
}

func TestPostgresConf(t *testing.T) {
	p := postgresService{Config{PostgresPort: 15432}}
	got := p.conf("/s/postgres/data")
	golden(t, "fsctl.conf.golden", got)
	long := "/" + strings.Repeat("d", 120)
	if c := p.conf(long); !strings.Contains(c, "unix_socket_directories = ''") {
		t.Errorf("a socket path past sun_path must disable unix sockets:\n%s", c)
	}
}

func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("%s differs (run go test -update to accept):\n--- got\n%s\n--- want\n%s", name, got, want)
	}
}
