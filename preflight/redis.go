package preflight

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/fsctl/fsctl/internal/checkout/room"
	"github.com/fsctl/fsctl/internal/contract/finding"
	"github.com/fsctl/fsctl/internal/platform/redisconn"
)

// pings is how many round trips the latency probe times.
const pings = 5

// checkRedis: nothing can evict the stock keys, what a restart would lose, enough replicas for
// the sale's WAIT, the scripts in the cache, and the round trip.
func checkRedis(ctx context.Context, e *env) []finding.Finding {
	if e.rdb == nil {
		return needs("redis", "Redis")
	}
	want := 0
	var cached []finding.Finding
	if e.bundled != nil {
		// The replicas the sale's writes wait for and the script cache are fsctl serve's: any
		// other target loads its own scripts its own way.
		want, cached = e.bundled.waitReplicas(), []finding.Finding{scripts(ctx, e)}
	}
	out := append([]finding.Finding{
		perMaster(ctx, e.rdb, eviction), perMaster(ctx, e.rdb, persistence),
		perMaster(ctx, e.rdb, func(ctx context.Context, node *redis.Client) finding.Finding {
			return replication(ctx, node, e.fix.replica, want)
		}),
	}, cached...)
	out = append(out, latency(ctx, e))
	if e.roomRdb != nil {
		// A separate Redis for the waiting rooms: evicting it loses places in the queue.
		r := perMaster(ctx, e.roomRdb, eviction)
		r.Check = "room eviction policy"
		out = append(out, r)
	}
	return out
}

// perMaster runs a node's check on the one node, or on every master of a cluster: the worst
// result stands for the cluster, each master's detail named by its address.
func perMaster(ctx context.Context, rdb redis.UniversalClient, check func(context.Context, *redis.Client) finding.Finding) finding.Finding {
	if c, ok := rdb.(*redis.Client); ok {
		return check(ctx, c)
	}
	var mu sync.Mutex
	var got []finding.Finding
	var addrs []string
	err := redisconn.ForEachMaster(ctx, rdb, func(ctx context.Context, node *redis.Client) error {
		r := check(ctx, node)
		mu.Lock()
		got, addrs = append(got, r), append(addrs, node.Options().Addr)
		mu.Unlock()
		return nil
	})
	if err != nil || len(got) == 0 {
		return finding.Finding{Group: "redis", Check: "cluster masters", Status: finding.Fail, Detail: fmt.Sprint("list the masters: ", err),
			Fix: "check the cluster (redis-cli --cluster check)"}
	}
	worst := 0
	var details []string
	for i, r := range got {
		if r.Status.Rank() > got[worst].Status.Rank() {
			worst = i
		}
		details = append(details, addrs[i]+": "+r.Detail)
	}
	slices.Sort(details)
	out := got[worst]
	out.Detail = fmt.Sprintf("%d masters; %s", len(got), strings.Join(details, "; "))
	return out
}

func configGet(ctx context.Context, rdb *redis.Client, names ...string) (map[string]string, error) {
	out := map[string]string{}
	for _, n := range names {
		m, err := rdb.ConfigGet(ctx, n).Result()
		if err != nil {
			return nil, fmt.Errorf("CONFIG GET %s: %w", n, err)
		}
		maps.Copy(out, m)
	}
	return out, nil
}

func eviction(ctx context.Context, rdb *redis.Client) finding.Finding {
	r := finding.Finding{Group: "redis", Check: "eviction policy"}
	cfg, err := configGet(ctx, rdb, "maxmemory-policy", "maxmemory")
	if err != nil {
		r.Status, r.Detail = finding.Warn, err.Error()
		r.Fix = "CONFIG is disabled here: confirm in your provider's console that maxmemory-policy is noeviction"
		return r
	}
	policy, limit := cfg["maxmemory-policy"], cfg["maxmemory"]
	r.Detail = fmt.Sprintf("maxmemory-policy %s, maxmemory %s", policy, humanBytes(limit))
	switch {
	case strings.HasPrefix(policy, "allkeys-"):
		r.Status = finding.Fail
		r.Detail += ": Redis may evict a stock counter or a buyer record when memory runs short"
		r.Fix = "CONFIG SET maxmemory-policy noeviction (and put it in redis.conf)"
	case strings.HasPrefix(policy, "volatile-"):
		r.Status = finding.Warn
		r.Detail += ": counters are safe (no TTL) but idempotency records may be evicted"
		r.Fix = "CONFIG SET maxmemory-policy noeviction"
	default:
		r.Status = finding.Pass
	}
	return r
}

func humanBytes(s string) string {
	n, err := strconv.ParseInt(s, 10, 64)
	switch {
	case err != nil:
		return s
	case n == 0:
		return "unlimited"
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	default:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	}
}

func persistence(ctx context.Context, rdb *redis.Client) finding.Finding {
	r := finding.Finding{Group: "redis", Check: "persistence"}
	cfg, err := configGet(ctx, rdb, "appendonly", "appendfsync", "save")
	if err != nil {
		r.Status, r.Detail = finding.Warn, err.Error()
		return r
	}
	aof, save := cfg["appendonly"] == "yes", strings.TrimSpace(cfg["save"]) != ""
	r.Detail = fmt.Sprintf("appendonly %s (fsync %s), RDB save %q", cfg["appendonly"], cfg["appendfsync"], cfg["save"])
	if !aof && !save {
		r.Status = finding.Warn
		r.Detail += ": a restart loses every hold and buyer record"
		r.Fix = "enable appendonly, or rehearse fsctl reconcile --rebuild-redis"
		return r
	}
	r.Status = finding.Pass
	return r
}

// replication: the primary, with the want replicas the sale's writes wait for; fix is the advice
// for a node without a replica.
func replication(ctx context.Context, rdb *redis.Client, fix string, want int) finding.Finding {
	r := finding.Finding{Group: "redis", Check: "replication"}
	info, err := rdb.Info(ctx, "replication").Result()
	if err != nil {
		r.Status, r.Detail = finding.Warn, fmt.Sprintf("INFO replication: %v", err)
		return r
	}
	role, replicas := infoField(info, "role"), infoField(info, "connected_slaves")
	n, _ := strconv.Atoi(replicas)
	r.Status, r.Detail = finding.Pass, fmt.Sprintf("role %s, %d connected replica(s)", role, n)
	switch {
	case role != "master":
		r.Status, r.Fix = finding.Fail, "point --redis-url at the primary: a replica refuses the scripts' writes"
	case n < want:
		r.Status = finding.Fail
		r.Detail += fmt.Sprintf(", the sale waits for %d", want)
		r.Fix = "bring the replicas up, or lower the sale's waitReplicas"
	case n == 0:
		r.Status = finding.Warn
		r.Detail += ": losing this node loses the sale's state"
		r.Fix = fix
	}
	return r
}

func infoField(info, name string) string {
	for line := range strings.SplitSeq(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), name+":"); ok {
			return v
		}
	}
	return ""
}

// scripts checks the script cache: the servers load it at start, and EVALSHA falls back to
// sending the whole script when it is gone (a restart, SCRIPT FLUSH, a failover), which costs the
// first burst.
func scripts(ctx context.Context, e *env) finding.Finding {
	r := finding.Finding{Group: "redis", Check: "scripts"}
	hashes := e.stock().ScriptHashes()
	sl := e.bundled.sale
	roomEnabled := sl != nil && sl.Room.Enabled && e.roomClient() == e.rdb
	if roomEnabled {
		for name, h := range room.New(e.rdb).ScriptHashes() {
			hashes["room "+name] = h
		}
	}
	names := slices.Sorted(maps.Keys(hashes))
	shas := make([]string, len(names))
	for i, n := range names {
		shas[i] = hashes[n]
	}
	// Each master has a script cache of its own: a failover or a restarted node comes back
	// without the scripts, while the others still have them.
	var mu sync.Mutex
	var missing []string
	err := redisconn.ForEachMaster(ctx, e.rdb, func(ctx context.Context, node *redis.Client) error {
		exists, err := node.ScriptExists(ctx, shas...).Result()
		if err != nil {
			return fmt.Errorf("%s: %w", node.Options().Addr, err)
		}
		var here []string
		for i, ok := range exists {
			if !ok {
				here = append(here, names[i])
			}
		}
		if len(here) > 0 {
			on := ""
			if _, cluster := e.rdb.(*redis.ClusterClient); cluster {
				on = " on " + node.Options().Addr
			}
			mu.Lock()
			missing = append(missing, strings.Join(here, ", ")+on)
			mu.Unlock()
		}
		return nil
	})
	if err != nil {
		r.Status, r.Detail = finding.Fail, fmt.Sprintf("SCRIPT EXISTS: %v", err)
		return r
	}
	slices.Sort(missing)
	if len(missing) == 0 {
		r.Status, r.Detail = finding.Pass, fmt.Sprintf("%d scripts cached", len(names))
		return r
	}
	r.Status = finding.Fail
	r.Detail = "not in the script cache: " + strings.Join(missing, "; ")
	r.Fix = "fsctl preflight --fix loads them (servers load them at start)"
	r.Repair = fmt.Sprintf("SCRIPT LOAD %d scripts", len(names))
	r.Apply = func(ctx context.Context) error {
		if err := e.stock().LoadScripts(ctx); err != nil {
			return err
		}
		if roomEnabled {
			return room.New(e.rdb).LoadScripts(ctx)
		}
		return nil
	}
	return r
}

func latency(ctx context.Context, e *env) finding.Finding {
	r := finding.Finding{Group: "redis", Check: "round trip"}
	rtts := make([]time.Duration, 0, pings)
	for range pings {
		start := time.Now()
		if err := e.rdb.Ping(ctx).Err(); err != nil {
			r.Status, r.Detail = finding.Fail, fmt.Sprintf("PING: %v", err)
			return r
		}
		rtts = append(rtts, time.Since(start))
	}
	slices.Sort(rtts)
	fastest, p50, worst := rtts[0], rtts[len(rtts)/2], rtts[len(rtts)-1]
	r.Status, r.Detail = finding.Pass, fmt.Sprintf("%d pings: median %s, worst %s", pings, round(p50), round(worst))
	// The fastest ping is the distance to Redis; the others add what this machine and Redis were
	// busy with (a CI box under load saw a 5.5 ms median to a Redis on loopback).
	if fastest > e.cfg.MaxRedisRTT {
		r.Status = finding.Warn
		r.Detail += fmt.Sprintf("; even the fastest %s, above %s", round(fastest), e.cfg.MaxRedisRTT)
		r.Fix = "every reserve is one round trip: run the servers next to Redis"
	}
	return r
}

func round(d time.Duration) time.Duration {
	switch {
	case d >= time.Millisecond:
		return d.Round(10 * time.Microsecond)
	default:
		return d.Round(time.Microsecond)
	}
}
