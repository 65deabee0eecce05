package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/fsctl/fsctl/examples/articleshop/articletest"
	"github.com/fsctl/fsctl/internal/harness/stack"
	"github.com/fsctl/fsctl/internal/harness/testenv"
	checkouttest "github.com/fsctl/fsctl/server/servertest"
)

func TestPreflightCommand(t *testing.T) {
	c := checkouttest.Start(t, checkouttest.Options{Quantity: 10})
	args := []string{"preflight", "--sale", c.Sale.ID, "--redis-url", stack.EndpointsFromEnv().RedisURL,
		"--postgres-url", c.PostgresURL, "--kafka-brokers", strings.Join(c.Brokers, ","),
		"--orders-topic", c.OrdersTopic, "--dead-letter-topic", c.DeadLetterTopic, "--consumer-group", c.ConsumerGroup,
		"--switches-key", c.SwitchesKey, "--target", c.Base, "--timeout", "3s", "-o", "json"}
	out, code, err := runCLI(t, args...)
	if code != 0 {
		t.Fatalf("exit %d (%v):\n%s", code, err, out)
	}
	var rep struct {
		Ready   bool `json:"ready"`
		Results []struct {
			Check, Status string
		} `json:"results"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil || !rep.Ready || len(rep.Results) < 15 {
		t.Fatalf("report %+v (%v):\n%s", rep, err, out)
	}
	// The local stack has one broker and no Redis replica: warnings, which --strict refuses.
	if _, code, _ := runCLI(t, append(args, "--strict")...); code != exitCheck {
		t.Fatalf("--strict with warnings: exit %d, want 1", code)
	}
	out, code, _ = runCLI(t, append(args[:len(args)-2], "--target", "http://127.0.0.1:1", "-o", "table")...)
	if code != exitCheck || !strings.Contains(out, "NOT READY") || !strings.Contains(out, "127.0.0.1:1") {
		t.Fatalf("unreachable server: exit %d\n%s", code, out)
	}
}

// TestPreflightForeignProfile: --profile points preflight at the Spring-article shop (no --sale:
// the article has none); ready, then a drifted counter exits 1 naming the item.
func TestPreflightForeignProfile(t *testing.T) {
	s := articletest.Start(t, 4)
	item := s.Items[0]
	args := []string{"preflight", "--profile", s.ProfilePath, "--redis-url", s.RedisURL, "--postgres-url", s.PostgresURL,
		"--kafka-brokers", strings.Join(s.Brokers, ","), "--orders-topic", s.Topic, "--consumer-group", s.Group,
		"--target", s.Base, "--item", item, "--timeout", "3s", "-o", "json"}
	out, code, err := runCLI(t, args...)
	type result struct{ Group, Check, Status, Detail string }
	var rep struct {
		Ready   bool     `json:"ready"`
		Profile string   `json:"profile"`
		Results []result `json:"results"`
	}
	find := func(check string) result {
		t.Helper()
		rep.Results = nil
		if err := json.Unmarshal([]byte(out), &rep); err != nil {
			t.Fatalf("%v:\n%s", err, out)
		}
		for _, r := range rep.Results {
			if r.Check == check {
				return r
			}
		}
		t.Fatalf("no check %q:\n%s", check, out)
		return result{}
	}
	if r := find("sale"); code != 0 || !rep.Ready || rep.Profile != "spring-article" || r.Status != "skip" {
		t.Fatalf("exit %d (%v), sale check %+v:\n%s", code, err, r, out)
	}
	if r := find("stock " + item); r.Status != "pass" || !strings.Contains(r.Detail, "redis 4 on 1 shard(s), expected 4") {
		t.Fatalf("stock: %+v", r)
	}
	key := s.Profile.Keys(s.Sale, item, 1)[0].Stock
	if err := testenv.Redis(t).IncrBy(context.Background(), key, 3).Err(); err != nil {
		t.Fatal(err)
	}
	out, code, _ = runCLI(t, args...)
	if r := find("stock " + item); code != exitCheck || rep.Ready || r.Status != "fail" || !strings.Contains(r.Detail, "redis holds 7, expected 4") {
		t.Fatalf("drift: exit %d, %+v", code, r)
	}
}

func TestPreflightFlags(t *testing.T) {
	if _, _, err := runCLI(t, "preflight"); err == nil || !strings.Contains(err.Error(), "sale") {
		t.Fatalf("no --sale: %v", err)
	}
	if _, _, err := runCLI(t, "preflight", "--sale", "s", "-o", "yaml"); err == nil || !strings.Contains(err.Error(), "table or json") {
		t.Fatalf("bad --output: %v", err)
	}
	// A profile that cannot be read is a run that could not start (1), not a usage error.
	if _, code, err := runCLI(t, "preflight", "--sale", "s", "--profile", "no-such-profile.yaml"); code != exitFailed || err == nil {
		t.Fatalf("missing profile: exit %d, %v", code, err)
	}
}
