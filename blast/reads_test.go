package blast_test

import (
	"bytes"
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/fsctl/fsctl/blast"
	"github.com/fsctl/fsctl/internal/contract/finding"
	"github.com/fsctl/fsctl/internal/contract/outcome"
	"github.com/fsctl/fsctl/internal/target/profile"
	"github.com/fsctl/fsctl/loadgen"
)

// TestRefreshesBesideTheBurst: 300 buyers each load the bundled server's sale page 5 times in the
// second before the release, then buy 30 units on the raw engine (reads do not need http). Every
// scheduled load is sent exactly once (each buyer sends its loads whatever their lateness, so the
// count is exact) and answered 200 or 304; the purchases still leave together and sell exactly the
// stock; the report keeps the reads apart from the purchases and their invariants.
func TestRefreshesBesideTheBurst(t *testing.T) {
	c := startCheckout(t, 30, 1)
	target := loadgen.Target{SaleID: c.sale.ID, ItemID: "hot"}
	ctx := context.Background()
	limits, err := blast.FetchLimits(ctx, http.DefaultClient, c.base, profile.Default(), []loadgen.Target{target})
	if err != nil {
		t.Fatal(err)
	}
	const buyers, refreshes = 300, 5
	p := plan(c.base, []loadgen.Target{target}, buyers)
	p.Engine, p.At = loadgen.EngineAuto, time.Now().Add(1500*time.Millisecond)
	p.Refresh = &loadgen.Refresh{Before: refreshes, Window: time.Second, Share: 1}
	res, err := loadgen.Run(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	if res.Resolved.Engine != loadgen.EngineRaw {
		t.Errorf("engine %+v: page reads must not push the purchases off the raw engine", res.Resolved)
	}
	if len(res.Reads) != buyers*refreshes {
		t.Fatalf("%d page loads, want %d buyers x %d", len(res.Reads), buyers, refreshes)
	}
	perBuyer := map[int]int{}
	page := c.base + "/api/v1/sales/" + c.sale.ID
	for _, r := range res.Reads {
		perBuyer[r.Buyer]++
		if r.Status != http.StatusOK && r.Status != http.StatusNotModified {
			t.Fatalf("page load answered %d (%s): %+v", r.Status, r.Error, r)
		}
		if r.URL != page || r.Method != http.MethodGet || !r.Intended.Before(p.At) || r.Intended.Before(p.At.Add(-time.Second)) || r.Written.Before(r.Intended) {
			t.Fatalf("page load %+v: want a GET of %s in the second before the release, not before its slot", r, page)
		}
	}
	if len(perBuyer) != buyers {
		t.Fatalf("%d buyers refreshed, want all %d", len(perBuyer), buyers)
	}
	n := outcomes(res.Records)
	if len(res.Records) != buyers || n[outcome.Reserved] != 30 || n[outcome.SoldOut] != buyers-30 {
		t.Fatalf("purchases %v of %d records, want 30 RESERVED and %d SOLD_OUT, and no page load among them", n, len(res.Records), buyers-30)
	}
	verdicts := blast.CheckResponses(res.Records, limits)
	sum := blast.Summarize(res, verdicts)
	var out bytes.Buffer
	if err := sum.Render(&out); err != nil {
		t.Fatal(err)
	}
	if !finding.OK(verdicts, false) {
		t.Fatalf("invariants:\n%s", out.String())
	}
	r := sum.Reads
	if r == nil || r.Requests != buyers*refreshes || r.Statuses["200"]+r.Statuses["304"] != buyers*refreshes || r.Refreshers != buyers ||
		r.Latency.Max <= 0 || r.Latency == sum.Latency || r.Conns != loadgen.DefaultReadConns || r.ConnsUsed == 0 {
		t.Fatalf("read summary %+v beside purchases %+v", r, sum.Latency)
	}
	if sum.Requests != buyers || sum.Outcomes[0].Count+sum.Outcomes[1].Count != buyers {
		t.Errorf("the purchases' report counts %d requests, want the %d purchases alone", sum.Requests, buyers)
	}
	// The purchases left at one instant, on connections no page load used: the reads have their
	// own pool and none is due in the quiet band around the release. These checks are exact; how
	// much the reads move the release spread and the purchases' latency is measured, not asserted
	// (no timing assertions in tests): BenchmarkBlastReadTraffic.
	readConns := map[string]bool{}
	for _, r := range res.Reads {
		readConns[r.Conn] = true
		if r.Intended.After(p.At.Add(-10 * time.Millisecond)) {
			t.Fatalf("a page load due %s before the release: inside the quiet band", p.At.Sub(r.Intended))
		}
	}
	for _, r := range res.Records {
		if readConns[r.Conn] || r.Written.Before(p.At) {
			t.Fatalf("purchase %+v: on a page load's connection, or written before the release", r)
		}
	}
	if sum.Skew.Max <= 0 || sum.Wake.Max <= 0 {
		t.Errorf("the report measures no release spread: written %+v, woke %+v", sum.Skew, sum.Wake)
	}
	t.Logf("purchases written p99 %.1fms max %.1fms after the release (barrier %.3fms late)", sum.Skew.P99, sum.Skew.Max, sum.ReleaseLateMs)
	for _, want := range []string{"purchases (writes", "PAGE READ", "all reads", "in flight at the release", "own pool of 64 HTTP/1.1 connections"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, out.String())
		}
	}
	var html bytes.Buffer
	if err := blast.WriteHTML(&html, sum, res.Records); err != nil || !strings.Contains(html.String(), "<h2>Page reads</h2>") ||
		!strings.Contains(html.String(), "<th>all reads</th><th>1500</th>") {
		t.Errorf("HTML report (%v) lacks the page reads", err)
	}
}

// TestOrderPollingReachesPersisted: every buyer told RESERVED polls its order until the bundled
// server says it is in PostgreSQL; auto falls back to http for it and says why.
func TestOrderPollingReachesPersisted(t *testing.T) {
	c := startCheckout(t, 20, 1)
	p := plan(c.base, []loadgen.Target{{SaleID: c.sale.ID, ItemID: "hot"}}, 100)
	p.Engine = loadgen.EngineAuto
	p.Poll = &loadgen.OrderPoll{Interval: 20 * time.Millisecond, Wait: 20 * time.Second}
	res, err := loadgen.Run(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	if res.Resolved.Engine != loadgen.EngineHTTP || !strings.Contains(res.Resolved.Fallback, "polling") {
		t.Errorf("resolution %+v: polling needs http, and the reason must say so", res.Resolved)
	}
	if n := outcomes(res.Records); n[outcome.Reserved] != 20 || len(res.Persisted) != 20 {
		t.Fatalf("outcomes %v, %d polled: want 20 reservations, each polled", n, len(res.Persisted))
	}
	for _, ps := range res.Persisted {
		d, ok := ps.TimeToPersisted()
		if !ok || d <= 0 || ps.Polls < 1 || ps.OrderID == "" {
			t.Fatalf("order %+v never reached persisted", ps)
		}
	}
	sum := blast.Summarize(res, blast.CheckResponses(res.Records, nil))
	pl := sum.Polling
	if pl == nil || pl.Reserved != 20 || pl.Persisted != 20 || pl.NotPersisted != 0 || pl.TimeToPersisted.Max <= 0 || pl.TimeToPersisted.P50 > pl.TimeToPersisted.Max {
		t.Fatalf("polling summary %+v", pl)
	}
	var out bytes.Buffer
	if err := sum.Render(&out); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "20 of 20 reservations persisted; 202 to persisted p50") {
		t.Errorf("report:\n%s", out.String())
	}
	var page bytes.Buffer
	if err := blast.WriteHTML(&page, sum, res.Records); err != nil || !strings.Contains(page.String(), "20 of 20 reservations persisted, 0 not within the wait") {
		t.Errorf("HTML report (%v) lacks the polling", err)
	}
}

// TestOrderPollingCountsOrdersNeverPersisted: a server that drops every order on its way to
// Kafka leaves each reservation unpersisted; polling gives up after its wait and the report
// counts every one, with what the last poll said.
func TestOrderPollingCountsOrdersNeverPersisted(t *testing.T) {
	base, sl, _ := startOverseller(t, 5, 1)
	p := plan(base, []loadgen.Target{{SaleID: sl.ID, ItemID: "hot"}}, 20)
	p.Poll = &loadgen.OrderPoll{Interval: 50 * time.Millisecond, Wait: time.Second}
	res, err := loadgen.Run(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	sum := blast.Summarize(res, nil)
	pl := sum.Polling
	if pl == nil || pl.Reserved != 20 || pl.Persisted != 0 || pl.NotPersisted != 20 {
		t.Fatalf("polling summary %+v: want all 20 reservations unpersisted", pl)
	}
	for _, ps := range res.Persisted {
		// A second of polls every 50ms: several each, however loaded the machine.
		if ps.Polls < 2 || !ps.Persisted.IsZero() {
			t.Errorf("order %+v: want polled again until the wait ran out", ps)
		}
	}
	if pl.NotPersistedLast["PENDING"] != 5 || pl.NotPersistedLast["NOT_FOUND"] != 15 {
		t.Errorf("last answers %v, want the 5 real holds PENDING and the 15 made-up ones NOT_FOUND", pl.NotPersistedLast)
	}
}
