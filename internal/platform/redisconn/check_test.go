package redisconn_test

import (
	"context"
	"strings"
	"testing"

	"github.com/fsctl/fsctl/internal/harness/stack"
	"github.com/fsctl/fsctl/internal/harness/testenv"
	"github.com/fsctl/fsctl/internal/platform/redisconn"
)

// TestCheckSaysWhichKindItIs: on the local stack's single node and its Redis Cluster, each address
// given in its own form passes; a cluster node given as one node, and a single node given as a
// cluster, are refused with the form to use instead.
func TestCheckSaysWhichKindItIs(t *testing.T) {
	testenv.Redis(t)
	testenv.RedisCluster(t)
	e := stack.EndpointsFromEnv()
	seed := must(t, e.RedisClusterURL).Nodes()[0]
	node := must(t, e.RedisURL).Nodes()[0]
	for _, tc := range []struct{ url, want string }{
		{e.RedisURL, ""},
		{e.RedisClusterURL, ""},
		{"redis://" + seed + "/0", "is a node of a Redis Cluster: give the cluster as redis+cluster://" + seed},
		{"redis+cluster://" + node, "not a node of a Redis Cluster: give"},
		{"redis+cluster://127.0.0.1:1", "unreachable"},
	} {
		c, err := redisconn.Open(tc.url, redisconn.Tune{MaxRetries: -1, DialerRetries: 1})
		if err != nil {
			t.Fatal(err)
		}
		err = redisconn.Check(context.Background(), c)
		_ = c.Close()
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v", tc.url, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: %v, want %q", tc.url, err, tc.want)
		}
	}
}

func must(t *testing.T, raw string) redisconn.Addr {
	t.Helper()
	a, err := redisconn.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	return a
}
