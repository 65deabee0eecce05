// Package testenv gives integration tests isolated pieces of the real local stack — a Redis client,
// a fresh PostgreSQL database, a fresh Kafka topic, unique ids — so tests can run in parallel without
// mocks. Endpoints come from FSCTL_REDIS_URL, FSCTL_POSTGRES_URL and FSCTL_KAFKA_BROKERS, defaulting
// to the stack that `make stack-up` starts.
//
// Every helper skips its test under `go test -short` and fails it, saying how to start the stack,
// when the service does not answer.
package testenv

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/fsctl/fsctl/internal/harness/stack"
	"github.com/fsctl/fsctl/internal/platform/reach"
	"github.com/fsctl/fsctl/internal/platform/redisconn"
)

// dialTimeout bounds each reachability check, so a missing stack fails fast rather than hanging.
const dialTimeout = 3 * time.Second

// unreachable fails tb in one line: the address once, the cause, and what fits — start (the
// command that starts what the test needs) for the local stack's own addresses, else a check of
// the address; env sets another.
func unreachable(tb testing.TB, service, addr string, err error, env, start string) {
	tb.Helper()
	e := reach.Unreachable(service, addr, err)
	if reach.Local(addr, stack.DefaultAddrs()) {
		tb.Fatalf("%v; start it with %s (or set %s)", e, start, env)
	}
	tb.Fatalf("%v; %s (or set %s)", e, reach.Hint(e, stack.DefaultAddrs()), env)
}

func skipShort(tb testing.TB) {
	tb.Helper()
	if testing.Short() {
		tb.Skip("integration test; run without -short")
	}
}

// Redis returns a client of the Redis at FSCTL_REDIS_URL, closed when the test ends. Tests share
// the server, so they should namespace their keys (for example with ID).
func Redis(tb testing.TB) *redis.Client {
	tb.Helper()
	skipShort(tb)
	url := stack.EndpointsFromEnv().RedisURL
	opts, err := redis.ParseURL(url)
	if err != nil {
		tb.Fatalf("redis url %q: %v", reach.Redact(url), err)
	}
	client := redis.NewClient(opts)
	tb.Cleanup(func() { _ = client.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), dialTimeout)
	defer cancel()
	if err := client.Ping(ctx).Err(); err != nil {
		unreachable(tb, "redis", opts.Addr, err, stack.EnvRedisURL, "`make stack-up`")
	}
	return client
}

// RedisCluster returns a client of the Redis Cluster at FSCTL_REDIS_CLUSTER_URL (the local
// stack's, `fsctl stack up --redis-cluster 3`, by default), closed when the test ends.
func RedisCluster(tb testing.TB) redis.UniversalClient {
	tb.Helper()
	skipShort(tb)
	url := stack.EndpointsFromEnv().RedisClusterURL
	client, err := redisconn.Open(url, redisconn.Tune{})
	if err != nil {
		tb.Fatalf("%v", err)
	}
	tb.Cleanup(func() { _ = client.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), dialTimeout)
	defer cancel()
	if err := redisconn.Check(ctx, client); err != nil {
		tb.Fatalf("%v; start it with `fsctl stack up --redis-cluster 3` (make test does), or set %s", err, stack.EnvRedisClusterURL)
	}
	return client
}

// ID returns a unique slug ([A-Za-z0-9_-], at most 40 characters) starting with prefix, for sale
// ids, item ids, key prefixes and the like. Its randomness comes from crypto/rand on purpose: ids
// must not collide across test processes sharing one stack, and they never feed an assertion.
func ID(tb testing.TB, prefix string) string {
	tb.Helper()
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		tb.Fatalf("random id: %v", err)
	}
	suffix := hex.EncodeToString(b[:]) // 16 characters
	p := slug(prefix)
	if max := idMax - len(suffix) - 1; len(p) > max {
		p = p[:max]
	}
	if p == "" {
		return suffix
	}
	return p + "-" + suffix
}

const idMax = 40

// slug replaces every character outside [A-Za-z0-9_-] with '-'.
func slug(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '_', r == '-':
			return r
		}
		return '-'
	}, s)
}

// ClosedAddr is a loopback address ("127.0.0.1:port") nothing listens on: a service there is down
// at once, refused rather than timed out. Unlike the other helpers it needs no service, and runs
// under -short too.
func ClosedAddr(tb testing.TB) string {
	tb.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	addr := l.Addr().String()
	if err := l.Close(); err != nil {
		tb.Fatal(err)
	}
	return addr
}
