package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/fsctl/fsctl/stack"
	"github.com/fsctl/fsctl/stock"
	"github.com/fsctl/fsctl/testenv"
	checkouttest "github.com/fsctl/fsctl/testenv/checkout"
)

func TestReconcileCommand(t *testing.T) {
	c := checkouttest.Start(t, checkouttest.Options{Quantity: 10})
	args := []string{"reconcile", "--sale", c.Sale.ID, "--redis-url", stack.EndpointsFromEnv().RedisURL,
		"--postgres-url", c.PostgresURL, "--kafka-brokers", strings.Join(c.Brokers, ","),
		"--orders-topic", c.OrdersTopic, "--dead-letter-topic", c.DeadLetterTopic, "--consumer-group", c.ConsumerGroup}
	out, code, err := runCLI(t, append(args, "-o", "json")...)
	var rep struct {
		OK    bool `json:"ok"`
		Items []struct {
			Item     string `json:"item"`
			Findings []struct{ Kind string }
		} `json:"items"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &rep) != nil || !rep.OK || len(rep.Items) != 1 {
		t.Fatalf("consistent sale: exit %d (%v) %+v\n%s", code, err, rep, out)
	}
	if err := testenv.Redis(t).IncrBy(context.Background(), stock.ItemKeys(c.Sale.ID, "hot").Stock(), 3).Err(); err != nil {
		t.Fatal(err)
	}
	out, code, _ = runCLI(t, args...)
	if code != 1 || !strings.Contains(out, "units lost or doubled") || !strings.Contains(out, "VIOLATIONS") {
		t.Fatalf("3 units added: exit %d\n%s", code, out)
	}
	out, code, _ = runCLI(t, append(args, "--fix")...)
	if code != 0 || !strings.Contains(out, "hot: move shard 0's counter by -3") {
		t.Fatalf("--fix: exit %d\n%s", code, out)
	}
	if _, _, err := runCLI(t, "reconcile", "--sale", c.Sale.ID, "-o", "xml"); err == nil || !strings.Contains(err.Error(), "table or json") {
		t.Fatalf("bad --output: %v", err)
	}
}
