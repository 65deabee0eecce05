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
			RedisURL:        "redis://127.0.0.1:16379/0",
			PostgresURL:     "postgres://fsctl@127.0.0.1:15432/fsctl?sslmode=disable",
			KafkaBrokers:    []string{"127.0.0.1:19092"},
			RedisClusterURL: "redis+cluster://127.0.0.1:17000,127.0.0.1:17001,127.0.0.1:17002",
		}},
		{"overrides", map[string]string{
			EnvRedisURL:        "redis://r:6379/2",
			EnvPostgresURL:     " postgres://u@p:5432/db ",
			EnvKafkaBrokers:    "k1:9092, k2:9092,,",
			EnvRedisClusterURL: "redis+cluster://c1:7000,c2:7000",
		}, Endpoints{
			RedisURL:        "redis://r:6379/2",
			PostgresURL:     "postgres://u@p:5432/db",
			KafkaBrokers:    []string{"k1:9092", "k2:9092"},
			RedisClusterURL: "redis+cluster://c1:7000,c2:7000",
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
	got := kafkaProperties(Config{KafkaPort: 19092, KafkaControllerPort: 19093}, "/stack/kafka/data")
	golden(t, "server.properties.golden", got)
	for _, want := range []string{"controller.quorum.voters=1@127.0.0.1:19093", "auto.create.topics.enable=false", "advertised.listeners=PLAINTEXT://127.0.0.1:19092"} {
		if !strings.Contains(got, want+"\n") {
			t.Errorf("properties lack %q", want)
		}
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
