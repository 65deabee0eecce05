package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/fsctl/fsctl/internal/checkout/saleops"
	"github.com/fsctl/fsctl/internal/checkout/stock"
	"github.com/fsctl/fsctl/internal/contract/outcome"
	"github.com/fsctl/fsctl/internal/contract/sale"
	"github.com/fsctl/fsctl/internal/harness/stack"
	"github.com/fsctl/fsctl/internal/harness/testenv"
)

// testSale is a sale created through `fsctl sale create` in a database of its own: item "hot"
// (5 units over 2 shards) and "cold" (3 units); its Redis keys are wiped when the test ends.
type testSale struct {
	id        string
	endpoints []string // --redis-url and --postgres-url
	st        *stock.Store
}

func createTestSale(t *testing.T) testSale {
	t.Helper()
	rdb := testenv.Redis(t)
	ts := testSale{id: testenv.ID(t, "sale"), st: stock.New(rdb),
		endpoints: []string{"--redis-url", stack.EndpointsFromEnv().RedisURL, "--postgres-url", testenv.Postgres(t)}}
	file := filepath.Join(t.TempDir(), "sale.yaml")
	def := fmt.Sprintf(`id: %s
name: CLI test sale
opensAt: 2020-01-01T00:00:00Z
items:
  - {id: hot, name: Hot item, quantity: 5, shards: 2}
  - {id: cold, name: Cold item, quantity: 3}
`, ts.id)
	if err := os.WriteFile(file, []byte(def), 0o600); err != nil {
		t.Fatal(err)
	}
	out, code, err := runCLI(t, append([]string{"sale", "create", "-f", file, "-o", "json"}, ts.endpoints...)...)
	var created struct {
		Sale  string `json:"sale"`
		Items []struct {
			ID     string `json:"id"`
			Stock  int64  `json:"stock"`
			Shards int    `json:"shards"`
		} `json:"items"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &created) != nil || created.Sale != ts.id || len(created.Items) != 2 ||
		created.Items[0].ID != "hot" || created.Items[0].Stock != 5 || created.Items[0].Shards != 2 || created.Items[1].Stock != 3 {
		t.Fatalf("sale create -o json: exit %d (%v)\n%s", code, err, out)
	}
	sl, err := sale.LoadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ts.st.Wipe(context.Background(), sl) })
	return ts
}

// run runs `fsctl sale VERB --sale ID` against the test sale's stores.
func (ts testSale) run(t *testing.T, verb string, args ...string) (string, int, error) {
	t.Helper()
	return runCLI(t, append(append([]string{"sale", verb, "--sale", ts.id}, ts.endpoints...), args...)...)
}

// reserve is one purchase attempt of item hot by a new buyer, straight through the reserve script.
func (ts testSale) reserve(t *testing.T) outcome.Code {
	t.Helper()
	res, err := ts.st.Reserve(context.Background(), stock.Request{SaleID: ts.id, ItemID: "hot", UserID: "u-" + uuid.NewString(),
		IdemKey: uuid.NewString(), OrderID: uuid.Must(uuid.NewV7()), Shards: 2})
	if err != nil {
		t.Fatal(err)
	}
	return res.Outcome
}

func TestSaleListAndShow(t *testing.T) {
	ts := createTestSale(t)
	out, code, err := runCLI(t, append([]string{"sale", "list", "-o", "json"}, ts.endpoints...)...)
	var rows []saleops.ListRow
	if code != 0 || json.Unmarshal([]byte(out), &rows) != nil || len(rows) != 1 {
		t.Fatalf("sale list: exit %d (%v)\n%s", code, err, out)
	}
	if r := rows[0]; r.ID != ts.id || r.Items != 2 || r.Quantity != 8 || r.Sold != 0 || r.Shards != 3 || r.LoadedShards != 3 {
		t.Errorf("sale list row %+v", r)
	}
	if out, _, _ := runCLI(t, append([]string{"sale", "list"}, ts.endpoints...)...); !strings.Contains(out, ts.id) || !strings.Contains(out, "loaded") {
		t.Errorf("sale list table:\n%s", out)
	}

	if ts.reserve(t) != outcome.Reserved {
		t.Fatal("the sale does not sell")
	}
	out, code, err = ts.run(t, "show", "-o", "json")
	var v saleops.View
	if code != 0 || json.Unmarshal([]byte(out), &v) != nil || v.Sale.ID != ts.id || len(v.Items) != 2 {
		t.Fatalf("sale show: exit %d (%v)\n%s", code, err, out)
	}
	hot := v.Items[slices.IndexFunc(v.Items, func(i saleops.ItemView) bool { return i.Item == "hot" })]
	if hot.Postgres.Quantity != 5 || hot.Redis.Stock != 4 || hot.Redis.Holds != 1 || len(hot.Redis.Shards) != 2 ||
		!hot.Redis.Shards[0].Loaded || hot.Redis.Shards[1].Paused || len(v.Notes) != 0 {
		t.Errorf("sale show after one reservation: %+v, notes %q", hot, v.Notes)
	}
	out, _, _ = ts.run(t, "show")
	for _, want := range []string{"sale " + ts.id + " (CLI test sale)", "REDIS STOCK", "PER SHARD", "hot"} {
		if !strings.Contains(out, want) {
			t.Errorf("sale show table lacks %q:\n%s", want, out)
		}
	}
}

// TestSalePauseResume: pause really pauses (the reserve script answers PAUSED) and says what
// changed in each store; resume undoes it.
func TestSalePauseResume(t *testing.T) {
	ts := createTestSale(t)
	out, code, err := ts.run(t, "pause")
	if code != 0 || !strings.Contains(out, "postgres: running -> paused") || !strings.Contains(out, "redis:    0 of 3 shard(s) paused -> 3 of 3") {
		t.Fatalf("sale pause: exit %d (%v)\n%s", code, err, out)
	}
	if got := ts.reserve(t); got != outcome.Paused {
		t.Errorf("a reserve of a paused sale answered %s, want PAUSED", got)
	}
	out, _, _ = ts.run(t, "show", "-o", "json")
	var v saleops.View
	if json.Unmarshal([]byte(out), &v) != nil || !v.Sale.Paused || !v.Items[0].Redis.Shards[0].Paused {
		t.Errorf("sale show after pause:\n%s", out)
	}

	out, code, err = ts.run(t, "resume", "-o", "json")
	var c saleops.PauseChange
	if code != 0 || json.Unmarshal([]byte(out), &c) != nil || c.Paused || !c.Postgres.Before || c.Postgres.After ||
		c.Redis.PausedBefore != 3 || c.Redis.PausedAfter != 0 {
		t.Fatalf("sale resume: exit %d (%v) %+v\n%s", code, err, c, out)
	}
	if got := ts.reserve(t); got != outcome.Reserved {
		t.Errorf("a reserve after resume answered %s, want RESERVED", got)
	}
}

func TestSaleCommandsRefuseAnUnknownSale(t *testing.T) {
	ts := createTestSale(t)
	for _, verb := range []string{"show", "pause", "resume"} {
		_, code, err := runCLI(t, append([]string{"sale", verb, "--sale", "no-such-sale"}, ts.endpoints...)...)
		if code != exitUsage || err == nil || !strings.Contains(err.Error(), "no sale no-such-sale") || !strings.Contains(err.Error(), "fsctl sale list") {
			t.Errorf("sale %s of an unknown sale: exit %d, %v", verb, code, err)
		}
	}
	for _, args := range [][]string{{"sale", "show"}, {"sale", "pause", "--sale", "a b"}, {"sale", "list", "-o", "xml"}} {
		if _, code, err := runCLI(t, append(args, ts.endpoints...)...); code != exitUsage {
			t.Errorf("fsctl %v: exit %d (%v), want %d", args, code, err, exitUsage)
		}
	}
}

func TestVersionCommand(t *testing.T) {
	out, code, err := runCLI(t, "version", "-o", "json")
	var b map[string]string
	if code != 0 || json.Unmarshal([]byte(out), &b) != nil {
		t.Fatalf("version -o json: exit %d (%v)\n%s", code, err, out)
	}
	for _, k := range []string{"version", "commit", "date", "go"} {
		if b[k] == "" {
			t.Errorf("version -o json has no %s: %s", k, out)
		}
	}
	if out, _, _ := runCLI(t, "--version"); !strings.HasPrefix(out, "fsctl version "+b["version"]+" (commit "+b["commit"]) {
		t.Errorf("--version: %q", out)
	}
}

// TestCompletion drives cobra's hidden __complete command as a shell does on Tab.
func TestCompletion(t *testing.T) {
	ts := createTestSale(t)
	complete := func(args ...string) []string {
		t.Helper()
		out, code, err := runCLI(t, append([]string{"__complete"}, args...)...)
		if code != 0 {
			t.Fatalf("__complete %v: exit %d (%v)", args, code, err)
		}
		var got []string
		for line := range strings.Lines(out) {
			if !strings.HasPrefix(line, ":") { // the last line is the directive
				got = append(got, strings.TrimSpace(line))
			}
		}
		return got
	}
	if got := complete("reconcile", "-o", ""); !slices.Equal(got, []string{"table", "json"}) {
		t.Errorf("-o offers %q", got)
	}
	if got := complete("sale", "show", "--output", ""); !slices.Equal(got, []string{"table", "json"}) {
		t.Errorf("sale show --output offers %q", got)
	}
	pg := ts.endpoints[3]
	if got := complete("reconcile", "--postgres-url", pg, "--sale", ""); !slices.Equal(got, []string{ts.id + "\tCLI test sale"}) {
		t.Errorf("--sale offers %q", got)
	}
	if got := complete("sale", "pause", "--postgres-url", pg, "--sale", "zz"); len(got) != 0 {
		t.Errorf("--sale zz offers %q", got)
	}
	if got := complete("reconcile", "--postgres-url", pg, "--sale", ts.id, "--item", "h"); !slices.Equal(got, []string{"hot\tHot item"}) {
		t.Errorf("--item offers %q", got)
	}
	if got := complete("sale", "show", "--postgres-url", "postgres://nobody@127.0.0.1:1/none", "--sale", ""); len(got) != 0 {
		t.Errorf("--sale with PostgreSQL unreachable offers %q", got)
	}
}
