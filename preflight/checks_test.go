package preflight

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fsctl/fsctl/internal/checkout/events"
	"github.com/fsctl/fsctl/internal/checkout/stock"
	"github.com/fsctl/fsctl/internal/contract/finding"
	"github.com/fsctl/fsctl/internal/contract/sale"
	"github.com/fsctl/fsctl/internal/platform/redisconn"
	"github.com/fsctl/fsctl/internal/platform/skew"
	"github.com/fsctl/fsctl/internal/target/profile"
)

func testSale() sale.Sale {
	sl := sale.Sale{ID: "s1", OpensAt: time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC), HoldTTL: 10 * time.Minute,
		Items: []sale.Item{{ID: "a", Quantity: 5}}}
	sl.Normalize()
	return sl
}

func TestCapacity(t *testing.T) {
	dir := t.TempDir()
	report := filepath.Join(dir, "blast.json")
	// blast prints more after its summary in some modes; only the first JSON value counts.
	if err := os.WriteFile(report, []byte(`{"throughputRps": 1000, "requests": 5000}`+"\n{\"journey\":1}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	notJSON := filepath.Join(dir, "notes.txt")
	if err := os.WriteFile(notJSON, []byte("throughput was great"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		report string
		room   sale.Room
		want   finding.Status
		detail string
	}{
		{"no report", "", sale.Room{}, finding.Skip, "no --capacity-report"},
		{"unreadable", filepath.Join(dir, "none.json"), sale.Room{}, finding.Fail, "no such file"},
		{"not a blast report", notJSON, sale.Room{}, finding.Fail, "notes.txt"},
		{"no room", report, sale.Room{}, finding.Warn, "no waiting room"},
		{"below", report, sale.Room{Enabled: true, AdmissionRate: 500}, finding.Pass, "admits 500 buyers/s"},
		{"little headroom", report, sale.Room{Enabled: true, AdmissionRate: 900}, finding.Warn, "admits 900"},
		{"above", report, sale.Room{Enabled: true, AdmissionRate: 1500}, finding.Fail, "1000 req/s"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			sl := testSale()
			sl.Room = tc.room
			e := &env{cfg: Config{SaleID: sl.ID, CapacityReport: tc.report}, bundled: &bundled{sale: &sl}}
			r := checkCapacity(t.Context(), e)[0]
			if r.Status != tc.want || !strings.Contains(r.Detail, tc.detail) {
				t.Fatalf("got %s %q, want %s with %q", r.Status, r.Detail, tc.want, tc.detail)
			}
		})
	}
}

// TestBundledLogNames: with no flags, the checks read the order log the bundled server writes,
// which its profile names.
func TestBundledLogNames(t *testing.T) {
	var c Config
	c.Defaults()
	if c.OrdersTopic != events.DefaultOrdersTopic || c.DeadLetterTopic != events.DefaultDeadLetterTopic ||
		c.ConsumerGroup != events.DefaultConsumerGroup {
		t.Fatalf("got %q, %q, %q", c.OrdersTopic, c.DeadLetterTopic, c.ConsumerGroup)
	}
}

func TestLimitsAndSchedule(t *testing.T) {
	sl := testSale()
	if r := limits(sl, 3*time.Second); r.Status != finding.Pass {
		t.Fatalf("sane limits: %+v", r)
	}
	if r := limits(sl, 10*time.Minute); r.Status != finding.Fail || r.Fix == "" {
		t.Fatalf("payment timeout = hold TTL: %+v", r)
	}
	short := sl
	short.HoldTTL = 20 * time.Second
	if r := limits(short, time.Second); r.Status != finding.Warn {
		t.Fatalf("20s hold: %+v", r)
	}
	before := sl.OpensAt.Add(-5 * time.Minute)
	if r := schedule(sl, before); r.Status != finding.Pass || !strings.Contains(r.Detail, "in 5m0s") {
		t.Fatalf("before the opening: %+v", r)
	}
	ended := sl
	ended.ClosesAt = sl.OpensAt.Add(time.Hour)
	if r := schedule(ended, ended.ClosesAt.Add(time.Second)); r.Status != finding.Fail {
		t.Fatalf("after the close: %+v", r)
	}
}

func TestMatchesFile(t *testing.T) {
	sl := testSale()
	if r := matchesFile(sl, sl, "f.yaml"); r.Status != finding.Pass {
		t.Fatalf("same sale: %+v", r)
	}
	other := testSale()
	other.OpensAt = other.OpensAt.Add(time.Hour)
	other.Items = append(other.Items, sale.Item{ID: "b", Quantity: 1, Shards: 1})
	r := matchesFile(sl, other, "f.yaml")
	for _, want := range []string{"opensAt: stored 2026-12-01T12:00:00Z, file 2026-12-01T13:00:00Z", "items: stored [a], file [a b]"} {
		if r.Status != finding.Fail || !strings.Contains(r.Detail, want) {
			t.Fatalf("got %+v, want a failure naming %q", r, want)
		}
	}
}

func TestReportOutputs(t *testing.T) {
	rep := Report{SaleID: "s1", At: time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC), Results: []finding.Finding{
		{Group: "redis", Check: "scripts", Status: finding.Fail, Detail: "not in the script cache: reserve", Fix: "load them",
			Repair: "SCRIPT LOAD 6 scripts", Apply: func(context.Context) error { return nil }},
		{Group: "kafka", Check: "durability", Status: finding.Warn, Detail: "replication factor 1"},
	}, Fixed: []finding.Applied{{Check: "stock a", Action: "preload"}}}
	var table bytes.Buffer
	if err := rep.Render(&table, false); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"NOT READY: 0 passed, 1 warnings, 1 failed", "[--fix: SCRIPT LOAD 6 scripts]", "fixed       stock a: preload"} {
		if !strings.Contains(table.String(), want) {
			t.Fatalf("table lacks %q:\n%s", want, table.String())
		}
	}
	var js bytes.Buffer
	if err := rep.WriteJSON(&js, true); err != nil {
		t.Fatal(err)
	}
	var back struct {
		Ready   bool              `json:"ready"`
		Results []finding.Finding `json:"results"`
	}
	if err := json.Unmarshal(js.Bytes(), &back); err != nil || back.Ready || len(back.Results) != 2 || back.Results[0].Repair == "" {
		t.Fatalf("json %s: %+v %v", js.String(), back, err)
	}
	warnOnly := Report{Results: rep.Results[1:]}
	if !warnOnly.Ready(false) || warnOnly.Ready(true) {
		t.Fatal("a warning must fail only a strict run")
	}
}

// TestSlotsBlameWhoStrays: keys the profile declares in two slots are the profile's to fix; a key
// only the bundled scripts add is fsctl's own bug.
func TestSlotsBlameWhoStrays(t *testing.T) {
	p := *profile.Default()
	e := &env{cfg: Config{SaleID: "s1"}, prof: &p}
	none := func(string, int) []string { return nil }
	if r := itemSlots(e, "hot", 2, none); r.Status != finding.Pass || r.Detail != "3 keys per shard share one slot: "+
		strconv.Itoa(redisconn.KeySlot(stock.ShardKeys("s1", "hot", 0, 2).Stock()))+", "+
		strconv.Itoa(redisconn.KeySlot(stock.ShardKeys("s1", "hot", 1, 2).Stock())) {
		t.Fatalf("one tag: %+v", r)
	}
	stray := func(string, int) []string { return []string{"{elsewhere}:meta"} }
	if r := itemSlots(e, "hot", 1, stray); r.Status != finding.Fail || !strings.Contains(r.Fix, "this fsctl build is broken") ||
		!strings.Contains(r.Detail, "{elsewhere}:meta in slot") {
		t.Fatalf("a script key strays: %+v", r)
	}
	p.Redis.Buyers = "{buyers:${item}}:buyers"
	if r := itemSlots(e, "hot", 1, none); r.Status != finding.Fail || !strings.Contains(r.Fix, "give every key of a shard one hash tag") {
		t.Fatalf("a profile key strays: %+v", r)
	}
}

// TestClockURL: a server's time comes from its sale page, else its health endpoint, else nowhere.
func TestClockURL(t *testing.T) {
	p := *profile.Default()
	e := &env{cfg: Config{SaleID: "s1"}, prof: &p}
	if got := e.clockURL("http://a/"); got != "http://a/api/v1/sales/s1" {
		t.Fatalf("sale page: %q", got)
	}
	p.HTTP.SalePage = ""
	if got := e.clockURL("http://a"); got != "http://a/healthz" {
		t.Fatalf("health: %q", got)
	}
	p.HTTP.Health = ""
	if got := e.clockURL("http://a"); got != "" {
		t.Fatalf("neither: %q", got)
	}
}

// TestClockReadToTheSecond: a Date header 400 ms off the middle of the round trip may be a true
// clock, so it passes a 250 ms limit; 1.4 s off is at least 0.9 s.
func TestClockReadToTheSecond(t *testing.T) {
	date := skew.Skew{Offset: 400 * time.Millisecond, RTT: 2 * time.Millisecond, Source: "Date header (±0.5s)", Resolution: time.Second}
	r := clockResult(clockReading{name: "server http://a", Skew: date}, 250*time.Millisecond)
	if r.Status != finding.Pass || r.Detail != "this machine is 0s ahead of server http://a (±501ms), from its Date header (±0.5s)" {
		t.Fatalf("within its second: %+v", r)
	}
	date.Offset = -1400 * time.Millisecond
	if r := clockResult(clockReading{name: "server http://a", Skew: date}, 250*time.Millisecond); r.Status != finding.Fail ||
		!strings.HasPrefix(r.Detail, "this machine is 900ms behind server http://a") || r.Fix == "" {
		t.Fatalf("beyond its second: %+v", r)
	}
	exact := skew.Skew{Offset: -3 * time.Millisecond, RTT: 2 * time.Millisecond}
	if r := clockResult(clockReading{name: "redis", Skew: exact}, time.Millisecond); r.Status != finding.Fail ||
		r.Detail != "this machine is 3ms behind redis (±1ms), more than --max-skew 1ms" {
		t.Fatalf("an exact clock: %+v", r)
	}
}

// TestValidateNeedsTheBundledSale: fsctl serve's checks read its sale; another profile's sale is
// only a label.
func TestValidateNeedsTheBundledSale(t *testing.T) {
	foreign := *profile.Default()
	foreign.Deep = ""
	for _, tc := range []struct {
		cfg Config
		ok  bool
	}{
		{Config{}, false},
		{Config{Profile: profile.Default()}, false},
		{Config{SaleID: "bf"}, true},
		{Config{Profile: &foreign}, true},
	} {
		if err := tc.cfg.Validate(); (err == nil) != tc.ok {
			t.Errorf("Validate(%+v) = %v", tc.cfg, err)
		}
	}
}
