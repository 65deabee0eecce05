package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/fsctl/fsctl/examples/articleshop/articletest"
	"github.com/fsctl/fsctl/internal/harness/stack"
	"github.com/fsctl/fsctl/internal/harness/testenv"
	checkouttest "github.com/fsctl/fsctl/server/servertest"
	"github.com/fsctl/fsctl/warroom"
)

func TestWarroomOnceJSONMatchesTheCheckout(t *testing.T) {
	c := checkouttest.Start(t, checkouttest.Options{Quantity: 5, Limit: 1})
	for _, u := range []string{"ann", "ben"} {
		if code, body := c.Buy(u, "hot", "k-"+u); code != 202 {
			t.Fatalf("purchase: %d %s", code, body)
		}
	}
	rec := filepath.Join(t.TempDir(), "timeline.jsonl")
	out, code, err := runCLI(t, "warroom", "--once", "--output", "json", "--window", "0", "--sale", c.Sale.ID,
		"--target", c.Base, "--admin-token", checkouttest.AdminToken, "--redis-url", stack.EndpointsFromEnv().RedisURL,
		"--postgres-url", c.PostgresURL, "--kafka-brokers", strings.Join(c.Brokers, ","), "--orders-topic", c.OrdersTopic,
		"--dead-letter-topic", c.DeadLetterTopic, "--consumer-group", c.ConsumerGroup, "--records", rec)
	if err != nil || code != 0 {
		t.Fatalf("exit %d: %v\n%s", code, err, out)
	}
	var s warroom.Snapshot
	if err := json.Unmarshal([]byte(out), &s); err != nil {
		t.Fatalf("output is not a snapshot: %v\n%s", err, out)
	}
	for _, r := range s.Readings() {
		if r.State != warroom.OK {
			t.Errorf("%s: %+v", r.Name, r.Status)
		}
	}
	if len(s.Items.Data) != 1 || s.Items.Data[0].Remaining != 3 || s.Items.Data[0].Held != 2 || s.Traffic.Data.Outcomes["RESERVED"] != 2 {
		t.Fatalf("snapshot %+v %+v", s.Items.Data, s.Traffic.Data)
	}
	f, err := os.Open(rec)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if recs, err := warroom.ReadRecords(f); err != nil || len(recs) != 1 || recs[0].Sale != c.Sale.ID {
		t.Fatalf("record: %v %+v", err, recs)
	}
}

func TestWarroomTableWithoutATerminalAndAbsentParts(t *testing.T) {
	c := checkouttest.Start(t, checkouttest.Options{Quantity: 5, Limit: 1})
	out, code, err := runCLI(t, "warroom", "--sale", c.Sale.ID, "--window", "0", "--target", c.Base,
		"--no-redis", "--no-kafka", "--postgres-url", c.PostgresURL, "--admin-token", "")
	if err != nil || code != 0 {
		t.Fatalf("exit %d: %v\n%s", code, err, out)
	}
	for _, want := range []string{"SOURCE", "items      n/a", "pipeline   n/a", "control    n/a", "orders     ok", "traffic    ok", "ALERTS     none"} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
}

func TestWarroomRejectsBadFlags(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "alerts.yaml")
	if err := os.WriteFile(bad, []byte("rules:\n  - metric: consumer_lag\n    wran: 5\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"warroom"}, exitUsage, `"sale" not set`}, // cobra's own flag check
		{[]string{"warroom", "--sale", "s", "--output", "yaml"}, 2, "--output"},
		{[]string{"warroom", "--sale", "s", "--alerts", bad}, 2, "line 3: rules[0].wran: unknown key (did you mean warn?"},
		{[]string{"warroom", "--sale", "s", "--fail-on", "sometimes"}, 2, "--fail-on"},
	} {
		_, code, err := runCLI(t, tc.args...)
		if code != tc.code || err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: exit %d, %v; want exit %d with an error containing %q", tc.args, code, err, tc.code, tc.want)
		}
	}
}

func TestWarroomFailOnFiringAlerts(t *testing.T) {
	rules := filepath.Join(t.TempDir(), "alerts.yaml")
	if err := os.WriteFile(rules, []byte("rules:\n  - metric: sources_down\n    warn: 1\n    crit: 10\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	args := []string{"warroom", "--once", "--window", "0", "--sale", "s", "--target", "http://127.0.0.1:1", "--alerts", rules,
		"--no-redis", "--no-postgres", "--no-kafka"}
	out, code, err := runCLI(t, args...)
	if code != 0 || err != nil || !strings.Contains(out, "warn sources_down 3") {
		t.Fatalf("without --fail-on (crit by default) and a warning: exit %d %v\n%s", code, err, out)
	}
	if _, code, err = runCLI(t, append(args, "--fail-on", "crit")...); code != 0 {
		t.Fatalf("--fail-on crit with a warning: exit %d %v", code, err)
	}
	if _, code, err = runCLI(t, append(args, "--fail-on", "warn")...); code != exitCheck || !strings.Contains(err.Error(), "sources_down") {
		t.Fatalf("--fail-on warn: exit %d %v", code, err)
	}
}

// TestWarroomOnceFailsDuringAnOutage: with every source down, --once exits 3 without being told
// to (--fail-on crit is its default), so a CI gate that forgot the flag does not pass during an
// outage; --fail-on none opts out.
func TestWarroomOnceFailsDuringAnOutage(t *testing.T) {
	args := []string{"warroom", "--once", "--window", "0", "--sale", "s", "--timeout", "2s",
		"--target", "http://" + testenv.ClosedAddr(t), "--admin-token", "t", "--redis-url", "redis://" + testenv.ClosedAddr(t) + "/0",
		"--postgres-url", "postgres://fsctl@" + testenv.ClosedAddr(t) + "/fsctl?sslmode=disable", "--kafka-brokers", testenv.ClosedAddr(t)}
	out, code, err := runCLI(t, args...)
	if code != exitCheck || err == nil || !strings.Contains(err.Error(), "sources_down") {
		t.Fatalf("every source down, no --fail-on: exit %d, %v; want exit %d naming sources_down\n%s", code, err, exitCheck, out)
	}
	if !strings.Contains(out, "crit sources_down") {
		t.Errorf("the snapshot does not show the critical alert:\n%s", out)
	}
	if out, code, err = runCLI(t, append(args, "--fail-on", "none")...); code != 0 || err != nil || !strings.Contains(out, "crit sources_down") {
		t.Fatalf("--fail-on none: exit %d, %v; want 0 with the alert shown\n%s", code, err, out)
	}
}

func TestWarroomOnceJSONOfTheArticleShopThroughItsProfile(t *testing.T) {
	shop := articletest.Start(t, 20)
	item := shop.Items[0]
	var mu sync.Mutex
	answers := map[int]int{}
	var wg sync.WaitGroup
	for i := range 30 {
		wg.Go(func() {
			code, _ := shop.Buy(fmt.Sprintf("buyer-%d", i), item)
			mu.Lock()
			answers[code]++
			mu.Unlock()
		})
	}
	wg.Wait()
	if answers[http.StatusAccepted] != 20 || answers[http.StatusGone] != 10 {
		t.Fatalf("answers %v, want 20 accepted and 10 sold out", answers)
	}
	shop.WaitOrders(item, 20)
	out, code, err := runCLI(t, "warroom", "--once", "-o", "json", "--window", "0", "--sale", shop.Sale, "--profile", shop.ProfilePath,
		"--item", item, "--target", shop.Base, "--redis-url", shop.RedisURL, "--postgres-url", shop.PostgresURL,
		"--kafka-brokers", strings.Join(shop.Brokers, ","), "--orders-topic", shop.Topic, "--consumer-group", shop.Group)
	if err != nil || code != 0 {
		t.Fatalf("exit %d: %v\n%s", code, err, out)
	}
	var s warroom.Snapshot
	if err := json.Unmarshal([]byte(out), &s); err != nil {
		t.Fatalf("output is not a snapshot: %v\n%s", err, out)
	}
	if s.Profile != "spring-article" {
		t.Errorf("snapshot names profile %q", s.Profile)
	}
	if !s.Items.OK() || len(s.Items.Data) != 1 || s.Items.Data[0].Quantity != 20 || s.Items.Data[0].Remaining != 0 || s.Items.Data[0].Buyers != 20 {
		t.Errorf("items %+v", s.Items)
	}
	if !s.Orders.OK() || len(s.Orders.Data) != 1 || s.Orders.Data[0].Live != 20 || s.Orders.Data[0].Sold != 20 || s.Derived.MaxDrift != 0 {
		t.Errorf("orders %+v, drift %d", s.Orders, s.Derived.MaxDrift)
	}
	if !s.Pipeline.OK() || s.Pipeline.Data.Group != shop.Group {
		t.Errorf("pipeline %+v", s.Pipeline)
	}
	for name, st := range map[string]warroom.Status{"traffic": s.Traffic.Status, "admission": s.Admission.Status,
		"payment": s.Payment.Status, "control": s.Control.Status} {
		if st.State != warroom.NotAvailable || !strings.Contains(st.Reason, "the profile declares no") {
			t.Errorf("%s: %+v, want not available because the profile declares no such endpoint", name, st)
		}
	}
}

func TestWarroomTableOfAProfileWithABrokenQuery(t *testing.T) {
	shop := articletest.Start(t, 5)
	b, err := os.ReadFile(shop.ProfilePath)
	if err != nil {
		t.Fatal(err)
	}
	broken := strings.Replace(string(b), "live: SELECT count(*) FROM flash_sale_order", "live: SELECT count(*) FROM flash_sale_orders", 1)
	if broken == string(b) {
		t.Fatal("the shipped profile's sql.live changed; update this test")
	}
	key := filepath.Join(articletest.Root(), "examples", "articleshop", "keys", "buyer-signing.pem")
	broken = strings.Replace(broken, "../examples/articleshop/keys/buyer-signing.pem", key, 1) // the copy lives elsewhere
	path := filepath.Join(t.TempDir(), "broken-article.yaml")
	if err := os.WriteFile(path, []byte(broken), 0o644); err != nil {
		t.Fatal(err)
	}
	out, code, err := runCLI(t, "warroom", "--once", "--window", "0", "--sale", shop.Sale, "--profile", path, "--item", shop.Items[0],
		"--target", shop.Base, "--redis-url", shop.RedisURL, "--postgres-url", shop.PostgresURL, "--no-kafka")
	if err != nil || code != 0 {
		t.Fatalf("exit %d: %v\n%s", code, err, out)
	}
	for _, want := range []string{"profile spring-article", "items      ok", "orders     down", "query sql.live", `relation "flash_sale_orders" does not exist`,
		"traffic    n/a", "not available: the profile declares no metrics endpoint", "pipeline   n/a", "not available: no Kafka brokers given"} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
}
