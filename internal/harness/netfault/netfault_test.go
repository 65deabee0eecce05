package netfault_test

import (
	"context"
	"strings"
	"testing"
	"time"

	toxiclient "github.com/Shopify/toxiproxy/v2/client"
	"github.com/redis/go-redis/v9"

	"github.com/fsctl/fsctl/internal/harness/netfault"
	"github.com/fsctl/fsctl/internal/harness/testenv"
)

// proxied is a Toxiproxy of the test's own with a proxy in front of the stack's Redis, and a client
// that reaches Redis only through it.
func proxied(t *testing.T) (*netfault.Client, *netfault.Proxy, *redis.Client) {
	t.Helper()
	upstream := testenv.Redis(t).Options().Addr
	tp, err := netfault.Local()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tp.Close() })
	p, err := tp.Create("redis", "127.0.0.1:0", upstream)
	if err != nil {
		t.Fatal(err)
	}
	rdb := redis.NewClient(&redis.Options{Addr: p.Listen, MaxRetries: -1, PoolSize: 1, DialTimeout: time.Second, ReadTimeout: 500 * time.Millisecond, WriteTimeout: 500 * time.Millisecond})
	t.Cleanup(func() { _ = rdb.Close() })
	if err := rdb.Ping(t.Context()).Err(); err != nil {
		t.Fatalf("through the proxy: %v", err)
	}
	return tp, p, rdb
}

// TestToxicsActOnRealTraffic: each toxic, while it is on, does to Redis traffic what it says; once
// its time is up the proxy is clean and the traffic flows again.
func TestToxicsActOnRealTraffic(t *testing.T) {
	tp, p, rdb := proxied(t)
	ctx := t.Context()
	big := strings.Repeat("x", 64<<10)
	if err := rdb.Set(ctx, "netfault:big", big, time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name  string
		toxic netfault.Toxic
		// during runs while the toxic is on; it fails the test with what it saw.
		during func() string
	}{
		{"latency", netfault.Latency(150*time.Millisecond, 0), func() string {
			begin := time.Now()
			if err := rdb.Ping(ctx).Err(); err != nil || time.Since(begin) < 300*time.Millisecond {
				return "a PING through 150ms each way took " + time.Since(begin).String() + ", err " + errString(err)
			}
			return ""
		}},
		{"partition", netfault.Partition(), func() string {
			if err := rdb.Ping(ctx).Err(); err == nil || !strings.Contains(err.Error(), "timeout") {
				return "a PING through a partition: " + errString(err) + ", want a timeout"
			}
			return ""
		}},
		{"reset_peer", netfault.Toxic{Type: "reset_peer", Stream: netfault.Upstream, Attributes: map[string]int{"timeout": 0}}, func() string {
			if err := rdb.Ping(ctx).Err(); err == nil {
				return "a PING through reset_peer was answered"
			}
			return ""
		}},
		{"limit_data", netfault.Toxic{Type: "limit_data", Attributes: map[string]int{"bytes": 1000}}, func() string {
			if err := rdb.Get(ctx, "netfault:big").Err(); err == nil {
				return "64 KiB came through a 1000-byte limit"
			}
			return ""
		}},
		{"slicer", netfault.Toxic{Type: "slicer", Attributes: map[string]int{"average_size": 100, "size_variation": 50, "delay": 10}}, func() string {
			if v, err := rdb.Get(ctx, "netfault:big").Result(); err != nil || v != big {
				return "a value sliced into 100-byte pieces came back changed: " + errString(err)
			}
			return ""
		}},
		{"bandwidth", netfault.Toxic{Type: "bandwidth", Attributes: map[string]int{"rate": 256}}, func() string {
			begin := time.Now()
			if err := rdb.Get(ctx, "netfault:big").Err(); err == nil && time.Since(begin) < 200*time.Millisecond {
				return "64 KiB at 256 KB/s in " + time.Since(begin).String()
			}
			return ""
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			during := make(chan string, 1)
			go func() {
				time.Sleep(100 * time.Millisecond) // the toxic is on
				during <- c.during()
			}()
			note, err := tp.Inject(ctx, p, c.toxic, 1500*time.Millisecond)
			if err != nil {
				t.Fatal(err)
			}
			if msg := <-during; msg != "" {
				t.Error(msg)
			}
			if left, err := tp.Toxics(p.Name); err != nil || len(left) != 0 {
				t.Errorf("after %q: toxics left %v %v", note, left, err)
			}
			rdb.Close() // a connection the toxic broke is not the next test's
			rdb = redis.NewClient(rdb.Options())
			if err := rdb.Ping(ctx).Err(); err != nil {
				t.Errorf("after the toxic: %v", err)
			}
		})
	}
}

// TestInterruptedRunLeavesNoToxic: an interrupted Inject removes its toxic; a toxic a killed run
// left behind is found and removed by the next run's Sweep, and one that is not fsctl's stays.
func TestInterruptedRunLeavesNoToxic(t *testing.T) {
	tp, p, _ := proxied(t)
	ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
	defer cancel()
	if _, err := tp.Inject(ctx, p, netfault.Partition(), time.Hour); err == nil || !strings.Contains(err.Error(), "interrupted, the toxic removed") {
		t.Errorf("interrupted: %v", err)
	}
	if left, _ := tp.Toxics(p.Name); len(left) != 0 {
		t.Errorf("an interrupted run left %v", left)
	}
	// A run killed before its clean-up: its toxics stay on the server, beside a team's own.
	api, err := toxiclient.NewClient(tp.URL).Proxy(p.Name)
	if err != nil {
		t.Fatal(err)
	}
	for name, stream := range map[string]string{netfault.Prefix + "latency-upstream-7": "upstream", netfault.Prefix + "latency-downstream-8": "downstream", "teams-own": "upstream"} {
		if _, err := api.AddToxic(name, "latency", stream, 1, toxiclient.Attributes{"latency": 1}); err != nil {
			t.Fatal(err)
		}
	}
	n, err := tp.Sweep()
	if err != nil || n != 2 {
		t.Errorf("sweep removed %d (%v), want the 2 fsctl left", n, err)
	}
	if left, _ := tp.Toxics(p.Name); len(left) != 1 || left[0] != "teams-own" {
		t.Errorf("after the sweep: %v, want only the team's own toxic", left)
	}
	if _, err := tp.Proxy("redsi"); err == nil || !strings.Contains(err.Error(), `no proxy "redsi" (it has: redis)`) {
		t.Errorf("a misspelled proxy: %v", err)
	}
}

func errString(err error) string {
	if err == nil {
		return "no error"
	}
	return err.Error()
}
