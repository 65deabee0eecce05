package redisconn

import (
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		in      string
		cluster bool
		nodes   string
		str     string
	}{
		{"redis://127.0.0.1:16379/0", false, "127.0.0.1:16379", "redis://127.0.0.1:16379/0"},
		{"redis://:pw@10.0.0.1:6379/3", false, "10.0.0.1:6379", "redis://10.0.0.1:6379/3"},
		{"redis+cluster://127.0.0.1:17000", true, "127.0.0.1:17000", "redis+cluster://127.0.0.1:17000"},
		{"redis+cluster://a:7000,b:7001,c:7002", true, "a:7000,b:7001,c:7002", "redis+cluster://a:7000,b:7001,c:7002"},
		{"rediss+cluster://u:secret@a:7000,b:7000/0?dial_timeout=2s", true, "a:7000,b:7000", "redis+cluster://a:7000,b:7000"},
	} {
		a, err := Parse(tc.in)
		if err != nil {
			t.Fatalf("Parse(%q): %v", tc.in, err)
		}
		if a.Cluster != tc.cluster || strings.Join(a.Nodes(), ",") != tc.nodes || a.String() != tc.str {
			t.Errorf("Parse(%q) = cluster %v nodes %v %q, want %v %s %q", tc.in, a.Cluster, a.Nodes(), a.String(), tc.cluster, tc.nodes, tc.str)
		}
		c := a.Open(Tune{DialTimeout: time.Second})
		_, isCluster := c.(*redis.ClusterClient)
		if isCluster != tc.cluster {
			t.Errorf("Open(%q) is a %T", tc.in, c)
		}
		_ = c.Close()
	}
	a, _ := Parse("rediss+cluster://u:secret@a:7000?dial_timeout=2s")
	if a.cluster.Password != "secret" || a.cluster.TLSConfig == nil || a.cluster.DialTimeout != 2*time.Second {
		t.Errorf("rediss+cluster options: %+v", a.cluster)
	}
}

// TestParseRefuses: every malformed address is an error that names the address (without its
// password) and the forms meant.
func TestParseRefuses(t *testing.T) {
	for in, want := range map[string]string{
		"":                                 "no scheme",
		"127.0.0.1:6379":                   "no scheme",
		"http://127.0.0.1:6379":            `unknown scheme "http"`,
		"redis://a:1,b:2":                  "several nodes",
		"redis+cluster://a:7000/2":         "only database 0",
		"redis+cluster://a:7000,,b:7000":   `seed "" is not host:port`,
		"redis+cluster://a":                `seed "a" is not host:port`,
		"redis+cluster://:pw@a:7000,b":     `seed "b" is not host:port`,
		"redis+cluster://a:7000?foo=bar":   "foo",
		"redis://:hunter2@a:1,b:2":         "redis://:xxxxx@a:1,b:2",
		"redis+cluster://:hunter2@a:1?x=%": "invalid",
		"redis://:hunter2@a:1/x":           "invalid database",
	} {
		_, err := Parse(in)
		if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), Forms) {
			t.Errorf("Parse(%q) = %v, want an error saying %q and the forms", in, err, want)
		}
		if err != nil && strings.Contains(err.Error(), "hunter2") {
			t.Errorf("Parse(%q) printed the password: %v", in, err)
		}
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{"redis://127.0.0.1:6379/0", "redis+cluster://a:1,b:2", "rediss+cluster://u:p@a:1?dial_timeout=1s", "redis+cluster://"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		a, err := Parse(s)
		if err != nil {
			return
		}
		if len(a.Nodes()) == 0 || a.String() == "" {
			t.Fatalf("Parse(%q) accepted an address with no node: %+v", s, a)
		}
	})
}

func TestSpread(t *testing.T) {
	labels := []string{"shard 0", "shard 1", "shard 2"}
	if d, c := Spread(labels, []string{"a", "b", "c"}, 3); c != "" || d != "shard 0 on a, shard 1 on b, shard 2 on c (3 of 3 masters)" {
		t.Errorf("spread evenly: %q %q", d, c)
	}
	if _, c := Spread(labels, []string{"a", "b", "a"}, 3); c != "shard 0 and shard 2 share a while another master holds none" {
		t.Errorf("crowded: %q", c)
	}
	if _, c := Spread(labels, []string{"a", "b", "a"}, 2); c != "" {
		t.Errorf("3 shards on 2 masters must share one: %q", c)
	}
	if _, c := Spread(labels, []string{"n", "n", "n"}, 1); c != "" {
		t.Errorf("one node: %q", c)
	}
}

// TestTune: what a caller tunes reaches the client of either kind; what it leaves zero keeps
// go-redis's default (MaxRetries -1, no retries, reads back as 0 on one node).
func TestTune(t *testing.T) {
	tune := Tune{PoolSize: 7, DialTimeout: 3 * time.Second, MaxRetries: -1}
	one, _ := Open("redis://127.0.0.1:1/0", tune)
	defer one.Close()
	if o := one.(*redis.Client).Options(); o.PoolSize != 7 || o.DialTimeout != 3*time.Second || o.MaxRetries > 0 || o.ReadTimeout == 0 {
		t.Errorf("one node: pool %d dial %s retries %d read %s", o.PoolSize, o.DialTimeout, o.MaxRetries, o.ReadTimeout)
	}
	cl, _ := Open("redis+cluster://127.0.0.1:1,127.0.0.1:2", tune)
	defer cl.Close()
	if o := cl.(*redis.ClusterClient).Options(); o.PoolSize != 7 || o.DialTimeout != 3*time.Second || o.MaxRetries > 0 || len(o.Addrs) != 2 {
		t.Errorf("cluster: pool %d dial %s retries %d addrs %v", o.PoolSize, o.DialTimeout, o.MaxRetries, o.Addrs)
	}
}

// TestCheckUnreachableIsOneLine: a node nothing answers at is named once, with the cause, and no
// advice to start the local stack from a package that cannot tell whether the address is its.
func TestCheckUnreachableIsOneLine(t *testing.T) {
	c, err := Open("redis://127.0.0.1:1/0", Tune{MaxRetries: -1, DialerRetries: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	err = Check(t.Context(), c)
	if err == nil || err.Error() != "redis 127.0.0.1:1 unreachable: connection refused" {
		t.Errorf("Check: %v", err)
	}
}
