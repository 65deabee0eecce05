package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/fsctl/fsctl/examples/articleshop/articletest"
	"github.com/fsctl/fsctl/internal/checkout/stock"
	"github.com/fsctl/fsctl/internal/harness/stack"
	"github.com/fsctl/fsctl/internal/harness/testenv"
	checkouttest "github.com/fsctl/fsctl/server/servertest"
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
	if code != exitInvariant || !strings.Contains(out, "units lost or doubled") || !strings.Contains(out, "VIOLATIONS") {
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

// TestReconcileProfileCommand reconciles the Spring-article shop through its shipped profile file:
// exit 0 while consistent, 1 with drift, 0 after --fix applied the profile's declared fixes.
func TestReconcileProfileCommand(t *testing.T) {
	s := articletest.Start(t, 10)
	item := s.Items[0]
	for i := range 5 {
		if code, body := s.Buy(fmt.Sprintf("user-%d", i), item); code != 202 {
			t.Fatalf("purchase %d: %d %s", i, code, body)
		}
	}
	s.WaitOrders(item, 5)
	args := []string{"reconcile", "--profile", s.ProfilePath, "--sale", s.Sale, "--redis-url", s.RedisURL,
		"--postgres-url", s.PostgresURL, "--kafka-brokers", strings.Join(s.Brokers, ","),
		"--orders-topic", s.Topic, "--consumer-group", s.Group, "--confirm-after", "50ms"}
	out, code, err := runCLI(t, append(args, "-o", "json")...)
	var rep struct {
		OK      bool   `json:"ok"`
		Profile string `json:"profile"`
		Items   []struct {
			Item string `json:"item"`
		} `json:"items"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &rep) != nil || !rep.OK || rep.Profile != "spring-article" ||
		len(rep.Items) != 1 || rep.Items[0].Item != item {
		t.Fatalf("consistent shop: exit %d (%v) %+v\n%s", code, err, rep, out)
	}
	if err := testenv.Redis(t).IncrBy(context.Background(), s.Profile.Keys(s.Sale, item, 1)[0].Stock, 2).Err(); err != nil {
		t.Fatal(err)
	}
	out, code, _ = runCLI(t, append(args, "--item", item)...)
	if code != exitInvariant || !strings.Contains(out, "through profile spring-article") || !strings.Contains(out, "unit(s) doubled") ||
		!strings.Contains(out, "VIOLATIONS") {
		t.Fatalf("2 units added: exit %d\n%s", code, out)
	}
	out, code, _ = runCLI(t, append(args, "--fix")...)
	if code != 0 || !strings.Contains(out, "changes made") || !strings.Contains(out, "from 7 to 5") {
		t.Fatalf("--fix: exit %d\n%s", code, out)
	}
	if _, code, err = runCLI(t, append(args, "--rebuild-redis")...); code != 2 || !strings.Contains(err.Error(), "only for fsctl serve") {
		t.Fatalf("--rebuild-redis with a foreign profile: exit %d %v", code, err)
	}
}
