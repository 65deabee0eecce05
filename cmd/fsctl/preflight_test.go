package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/fsctl/fsctl/stack"
	checkouttest "github.com/fsctl/fsctl/testenv/checkout"
)

func TestPreflightCommand(t *testing.T) {
	c := checkouttest.Start(t, checkouttest.Options{Quantity: 10})
	args := []string{"preflight", "--sale", c.Sale.ID, "--redis-url", stack.EndpointsFromEnv().RedisURL,
		"--postgres-url", c.PostgresURL, "--kafka-brokers", strings.Join(c.Brokers, ","),
		"--orders-topic", c.OrdersTopic, "--dead-letter-topic", c.DeadLetterTopic, "--consumer-group", c.ConsumerGroup,
		"--switches-key", c.SwitchesKey, "--server", c.Base, "--timeout", "3s", "-o", "json"}
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
	if _, code, _ := runCLI(t, append(args, "--strict")...); code != 1 {
		t.Fatalf("--strict with warnings: exit %d, want 1", code)
	}
	out, code, _ = runCLI(t, append(args[:len(args)-2], "--server", "http://127.0.0.1:1", "-o", "table")...)
	if code != 1 || !strings.Contains(out, "NOT READY") || !strings.Contains(out, "127.0.0.1:1") {
		t.Fatalf("unreachable server: exit %d\n%s", code, out)
	}
}

func TestPreflightFlags(t *testing.T) {
	if _, _, err := runCLI(t, "preflight"); err == nil || !strings.Contains(err.Error(), "sale") {
		t.Fatalf("no --sale: %v", err)
	}
	if _, _, err := runCLI(t, "preflight", "--sale", "s", "-o", "yaml"); err == nil || !strings.Contains(err.Error(), "table or json") {
		t.Fatalf("bad --output: %v", err)
	}
}
