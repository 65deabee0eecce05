// Package redisconn is the one form of a Redis address every fsctl command and the server take: a
// redis:// (or rediss://) URL for one node, or redis+cluster:// (rediss+cluster://) with one or
// more seed nodes, comma-separated, for a Redis Cluster:
//
//	redis://127.0.0.1:6379/0
//	redis+cluster://10.0.0.1:7000,10.0.0.2:7000,10.0.0.3:7000
//	rediss+cluster://user:secret@redis.example:7000?dial_timeout=2s
//
// Open returns a go-redis client for either: a *redis.Client for one node, a *redis.ClusterClient
// for a cluster, so code above it holds a redis.UniversalClient and is written once for both.
package redisconn

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/fsctl/fsctl/internal/platform/reach"
)

// The schemes of a Redis Cluster address.
const (
	ClusterScheme    = "redis+cluster"
	ClusterTLSScheme = "rediss+cluster"
)

// ErrWrongKind is what Check wraps when the address names the wrong kind of Redis: a node of a
// cluster given as one node, or one node given as a cluster. No retry mends it.
var ErrWrongKind = errors.New("wrong kind of Redis address")

// ClusterReload is how often a cluster client re-reads the slot map, so it follows a failover.
const ClusterReload = time.Second

// Forms is what an address may look like, for error messages and --help.
const Forms = "redis://host:port/db for one node, or redis+cluster://host:port,host:port for a Redis Cluster"

// Addr is a parsed Redis address: one node, or the seeds of a cluster.
type Addr struct {
	// Cluster is true for a redis+cluster:// address.
	Cluster bool
	single  *redis.Options
	cluster *redis.ClusterOptions
}

// lookupEnv is how Parse reads FSCTL_REDIS_* (a test's map in tests).
var lookupEnv = os.LookupEnv

// Parse reads a Redis address; an error says what is wrong and which forms are meant. A TLS
// address (rediss://, rediss+cluster://) takes ca, cert, key and server_name query parameters;
// FSCTL_REDIS_CA, _CERT, _KEY, _SERVER_NAME, _USER and _PASSWORD complete what it does not say
// (see Security).
func Parse(raw string) (Addr, error) {
	rest, sec, err := splitSecurity(raw)
	if err != nil {
		return Addr{}, err
	}
	a, err := parse(rest)
	if err != nil {
		return a, err
	}
	if err := a.secure(sec.or(SecurityFromEnv(lookupEnv))); err != nil {
		return Addr{}, fmt.Errorf("redis address %q: %w", reach.Redact(rest), err)
	}
	return a, nil
}

func parse(raw string) (Addr, error) {
	bad := func(why string, a ...any) (Addr, error) {
		// A parser's message may quote the address: never with its password.
		msg := fmt.Sprintf(why, a...)
		if pw := password(raw); pw != "" {
			msg = strings.ReplaceAll(msg, pw, "xxxxx")
		}
		return Addr{}, fmt.Errorf("redis address %q: %s (want %s)", reach.Redact(raw), msg, Forms)
	}
	scheme, rest, ok := strings.Cut(raw, "://")
	if !ok || rest == "" {
		return bad("no scheme")
	}
	switch scheme {
	case "redis", "rediss":
		o, err := redis.ParseURL(raw)
		if err != nil {
			return bad("%v", trim(err))
		}
		if strings.Contains(o.Addr, ",") {
			return bad("several nodes in a redis:// address: a cluster is %s://", ClusterScheme)
		}
		return Addr{single: o}, nil
	case ClusterScheme, ClusterTLSScheme:
	default:
		return bad("unknown scheme %q", scheme)
	}
	// The authority holds a list of hosts, which net/url does not parse: take it apart here.
	authority, query, _ := strings.Cut(rest, "?")
	authority, path, _ := strings.Cut(authority, "/")
	user, hosts := "", authority
	if at := strings.LastIndex(authority, "@"); at >= 0 {
		user, hosts = authority[:at+1], authority[at+1:]
	}
	if p := strings.Trim(path, "/"); p != "" && p != "0" {
		return bad("a cluster has only database 0, not %q", p)
	}
	seeds := strings.Split(hosts, ",")
	for _, s := range seeds {
		if s == "" || !strings.Contains(s, ":") || strings.HasSuffix(s, ":") || strings.ContainsAny(s, " /@") {
			return bad("seed %q is not host:port", s)
		}
	}
	q, err := url.ParseQuery(query)
	if err != nil {
		return bad("%v", trim(err))
	}
	for _, s := range seeds[1:] {
		q.Add("addr", s)
	}
	base := strings.TrimSuffix(scheme, "+cluster") + "://" + user
	o, err := redis.ParseClusterURL(base + seeds[0] + "?" + q.Encode())
	if err != nil {
		return bad("%v", trim(err))
	}
	return Addr{Cluster: true, cluster: o}, nil
}

func trim(err error) string { return strings.TrimPrefix(err.Error(), "redis: ") }

// Nodes lists the nodes the address names: the one node, or the cluster's seeds.
func (a Addr) Nodes() []string {
	if a.Cluster {
		return append([]string(nil), a.cluster.Addrs...)
	}
	if a.single == nil {
		return nil
	}
	return []string{a.single.Addr}
}

// String names the address without its password.
func (a Addr) String() string {
	if a.Cluster {
		return ClusterScheme + "://" + strings.Join(a.cluster.Addrs, ",")
	}
	if a.single == nil {
		return ""
	}
	return fmt.Sprintf("redis://%s/%d", a.single.Addr, a.single.DB)
}

// Tune are the client settings a caller chooses; zero values keep go-redis's defaults.
type Tune struct {
	DialTimeout, ReadTimeout, WriteTimeout time.Duration
	PoolSize, MinIdleConns                 int
	// MaxRetries < 0 turns retries off; DialerRetries bounds the dial attempts of one connection.
	MaxRetries, DialerRetries int
}

// Open returns the client for the address: a *redis.Client for one node, a *redis.ClusterClient
// for a cluster.
func (a Addr) Open(t Tune) redis.UniversalClient {
	if a.Cluster {
		o := *a.cluster
		t.apply(&o.DialTimeout, &o.ReadTimeout, &o.WriteTimeout, &o.PoolSize, &o.MinIdleConns, &o.MaxRetries, &o.DialerRetries)
		if o.ClusterStateReloadInterval == 0 {
			// go-redis re-reads the slot map on MOVED, which a dead master never answers, and
			// otherwise every 60 s: its replica's failover would go unseen for up to a minute
			// (measured: 54 s after a 6 s failover). One CLUSTER SLOTS a second follows it.
			o.ClusterStateReloadInterval = ClusterReload
		}
		return redis.NewClusterClient(&o)
	}
	o := *a.single
	t.apply(&o.DialTimeout, &o.ReadTimeout, &o.WriteTimeout, &o.PoolSize, &o.MinIdleConns, &o.MaxRetries, &o.DialerRetries)
	return redis.NewClient(&o)
}

// apply sets the options a caller chose over go-redis's, one node's or a cluster's alike.
func (t Tune) apply(dial, read, write *time.Duration, pool, idle, retries, dialRetries *int) {
	for _, d := range []struct {
		to *time.Duration
		v  time.Duration
	}{{dial, t.DialTimeout}, {read, t.ReadTimeout}, {write, t.WriteTimeout}} {
		if d.v != 0 {
			*d.to = d.v
		}
	}
	for _, n := range []struct{ to, v *int }{{pool, &t.PoolSize}, {idle, &t.MinIdleConns}, {retries, &t.MaxRetries}, {dialRetries, &t.DialerRetries}} {
		if *n.v != 0 {
			*n.to = *n.v
		}
	}
}

// Open parses the address and opens its client.
func Open(raw string, t Tune) (redis.UniversalClient, error) {
	a, err := Parse(raw)
	if err != nil {
		return nil, err
	}
	return a.Open(t), nil
}

// Name says which node, or which cluster's seeds, a client talks to, for messages.
func Name(c redis.UniversalClient) string {
	switch c := c.(type) {
	case *redis.Client:
		return c.Options().Addr
	case *redis.ClusterClient:
		return "cluster " + strings.Join(c.Options().Addrs, ",")
	}
	return "redis"
}

// ForEachMaster runs fn on every master: each master of a cluster, or the one node.
func ForEachMaster(ctx context.Context, c redis.UniversalClient, fn func(ctx context.Context, node *redis.Client) error) error {
	switch c := c.(type) {
	case *redis.Client:
		return fn(ctx, c)
	case *redis.ClusterClient:
		return c.ForEachMaster(ctx, fn)
	}
	return fmt.Errorf("redis: a %T cannot list its masters", c)
}

// Check reaches the address's nodes and makes sure the address says what they are: a node of a
// Redis Cluster given as redis:// (its keys would answer MOVED), a single node given as
// redis+cluster://, and a cluster whose state is not ok are each refused with what to do.
func Check(ctx context.Context, c redis.UniversalClient) error {
	name := Name(c)
	switch c := c.(type) {
	case *redis.Client:
		info, err := c.Info(ctx, "cluster").Result()
		if err != nil {
			// A provider may rename or refuse INFO: then the node is only reached, not told apart.
			if perr := c.Ping(ctx).Err(); perr != nil {
				return reach.Unreachable("redis", c.Options().Addr, perr)
			}
			return nil
		}
		if strings.Contains(info, "cluster_enabled:1") {
			return fmt.Errorf("redis %s is a node of a Redis Cluster: give the cluster as %s://%s (one node alone would answer MOVED for most keys): %w",
				name, ClusterScheme, c.Options().Addr, ErrWrongKind)
		}
		return nil
	case *redis.ClusterClient:
		var nodeErr error
		err := c.ForEachShard(ctx, func(ctx context.Context, n *redis.Client) error {
			info, err := n.ClusterInfo(ctx).Result()
			switch {
			case err != nil && strings.Contains(err.Error(), "cluster support disabled"):
				nodeErr = fmt.Errorf("redis %s is not a node of a Redis Cluster: give it as redis://%s: %w", n.Options().Addr, n.Options().Addr, ErrWrongKind)
				return nodeErr
			case err != nil:
				return fmt.Errorf("redis cluster node %s: %w", n.Options().Addr, err)
			case !strings.Contains(info, "cluster_state:ok"):
				return fmt.Errorf("redis cluster node %s says %s: wait for the cluster to recover (or fix its slots) before the sale", n.Options().Addr, field(info, "cluster_state"))
			}
			return nil
		})
		if err != nil && nodeErr == nil && strings.Contains(err.Error(), "cluster support disabled") {
			seed := c.Options().Addrs[0]
			return fmt.Errorf("redis %s is not a node of a Redis Cluster: give it as redis://%s/0: %w", seed, seed, ErrWrongKind)
		}
		if err != nil && !errors.Is(err, nodeErr) {
			return reach.Unreachable("redis cluster", strings.Join(c.Options().Addrs, ","), err)
		}
		return err
	}
	return c.Ping(ctx).Err()
}

// field reads "name:value" from an INFO-style reply.
func field(info, name string) string {
	for _, line := range strings.Split(info, "\n") {
		if k, v, ok := strings.Cut(strings.TrimSpace(line), ":"); ok && k == name {
			return name + ":" + v
		}
	}
	return name + " unknown"
}

// password is the address's password, if it has one.
func password(raw string) string {
	_, rest, _ := strings.Cut(raw, "://")
	if at := strings.LastIndex(rest, "@"); at >= 0 {
		if _, pw, ok := strings.Cut(rest[:at], ":"); ok {
			return pw
		}
	}
	return ""
}

// Scan calls fn with every key matching pattern, one call at a time: one SCAN per master on a
// cluster (a cluster client's SCAN would read one node only), else one SCAN through the client.
func Scan(ctx context.Context, c redis.UniversalClient, pattern string, count int64, fn func(key string)) error {
	var mu sync.Mutex
	scan := func(ctx context.Context, node redis.UniversalClient, name string) error {
		iter := node.Scan(ctx, 0, pattern, count).Iterator()
		for iter.Next(ctx) {
			mu.Lock()
			fn(iter.Val())
			mu.Unlock()
		}
		if err := iter.Err(); err != nil {
			return fmt.Errorf("scan %s: %w", name, err)
		}
		return nil
	}
	cc, ok := c.(*redis.ClusterClient)
	if !ok {
		return scan(ctx, c, Name(c))
	}
	return cc.ForEachMaster(ctx, func(ctx context.Context, node *redis.Client) error {
		return scan(ctx, node, node.Options().Addr)
	})
}

// Placement says which master holds each key on a cluster: the address per key, in order, and
// how many masters the cluster has. On one node every key is on it, and masters is 1.
func Placement(ctx context.Context, c redis.UniversalClient, keys []string) (nodes []string, masters int, err error) {
	cc, ok := c.(*redis.ClusterClient)
	if !ok {
		nodes = make([]string, len(keys))
		for i := range nodes {
			nodes[i] = Name(c)
		}
		return nodes, 1, nil
	}
	var mu sync.Mutex
	if err := cc.ForEachMaster(ctx, func(context.Context, *redis.Client) error {
		mu.Lock()
		masters++
		mu.Unlock()
		return nil
	}); err != nil {
		return nil, 0, err
	}
	for _, k := range keys {
		m, err := cc.MasterForKey(ctx, k)
		if err != nil {
			return nil, masters, fmt.Errorf("the master of %s: %w", k, err)
		}
		nodes = append(nodes, m.Options().Addr)
	}
	return nodes, masters, nil
}

// Spread says how labelled keys spread over the masters ("shard 0 on A, shard 1 on B (2 of 3
// masters)") and, when two of them share a master while another master holds none, which share
// it (empty otherwise).
func Spread(labels, nodes []string, masters int) (detail, crowded string) {
	per := map[string][]string{}
	parts := make([]string, len(nodes))
	for i, n := range nodes {
		per[n] = append(per[n], labels[i])
		parts[i] = labels[i] + " on " + n
	}
	detail = fmt.Sprintf("%s (%d of %d masters)", strings.Join(parts, ", "), len(per), masters)
	if len(per) >= min(len(nodes), masters) {
		return detail, ""
	}
	for _, n := range nodes { // in key order, so the message is stable
		if ls := per[n]; len(ls) > 1 {
			return detail, fmt.Sprintf("%s share %s while another master holds none", strings.Join(ls, " and "), n)
		}
	}
	return detail, ""
}

// The variables that complete a Redis address for a secured server: the CA its certificate
// chains to, a client certificate, the name to check, and the ACL user and password (which may
// also be in the URL).
const (
	EnvCA         = "FSCTL_REDIS_CA"
	EnvCert       = "FSCTL_REDIS_CERT"
	EnvKey        = "FSCTL_REDIS_KEY"
	EnvServerName = "FSCTL_REDIS_SERVER_NAME"
	EnvUser       = "FSCTL_REDIS_USER"
	EnvPassword   = "FSCTL_REDIS_PASSWORD"
)
