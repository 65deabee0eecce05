package blast_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/fsctl/fsctl/blast"
	"github.com/fsctl/fsctl/internal/contract/outcome"
	"github.com/fsctl/fsctl/loadgen"
)

func TestSummaryAndThresholds(t *testing.T) {
	at := time.Unix(1000, 0)
	rec := func(o outcome.Code, ms int, conn string) loadgen.Record {
		d := time.Duration(ms) * time.Millisecond
		r := loadgen.Record{User: conn, Key: fmt.Sprint("k", ms), Outcome: o, Intended: at, Attempt: 1,
			Started: at, Written: at.Add(d / 2), Done: at.Add(d), Conn: conn, Proto: "HTTP/1.1"}
		if o == outcome.Reserved {
			r.OrderID = fmt.Sprint("order-", ms)
		}
		return r
	}
	res := &loadgen.Result{At: at, Released: at, Buyers: 4, Conns: 2, Records: []loadgen.Record{
		rec(outcome.Reserved, 10, "c1"), rec(outcome.Reserved, 20, "c2"), rec(outcome.SoldOut, 15, "c1"),
		rec(outcome.SoldOut, 30, "c1"), rec(outcome.SoldOut, 40, "c2"),
	}}
	s := blast.Summarize(res, nil)
	if s.Sold != 2 || s.Requests != 5 || s.ConnsUsed != 2 || s.PerConnMax != 3 || s.Protocol != "HTTP/1.1" {
		t.Fatalf("summary %+v", s)
	}
	if s.SoldOutMs == nil || *s.SoldOutMs != 30 {
		t.Errorf("time to sold out %v, want 30ms (the first SOLD_OUT after the last RESERVED)", s.SoldOutMs)
	}
	if s.Latency.Max < 40 || s.Latency.Max > 40.1 || s.Throughput != 125 || s.Outcomes[0].Outcome != outcome.Reserved || s.Outcomes[1].Count != 3 {
		t.Errorf("latency %+v, throughput %v, outcomes %+v", s.Latency, s.Throughput, s.Outcomes)
	}
	// Written 5 (won), 7.5, 10 (won), 15, 20 ms: one of the first two clicks won.
	if f := s.Fairness; len(f) != 1 || f[0].Won != 2 || f[0].FirstKWon != 1 || f[0].OrderBy != "written" {
		t.Errorf("fairness %+v", f)
	}
	if s.Check(blast.Thresholds{MaxP99: time.Second, MinThroughput: 100, ExpectSold: 2}) {
		t.Errorf("thresholds met but failed: %v", s.Failures)
	}
	if !s.Check(blast.Thresholds{MaxP99: 20 * time.Millisecond, MinThroughput: 1000, ExpectSold: 3}) || len(s.Failures) != 3 {
		t.Errorf("failures %v, want all three thresholds missed", s.Failures)
	}
	var out bytes.Buffer
	if err := s.Render(&out); err != nil || !strings.Contains(out.String(), "threshold FAILED  2 units sold, --expect-sold 3") ||
		!strings.Contains(out.String(), "1 of the first 2 clicks by written time won (0.50; 5 clicks), rho 0.58 (max 0.87)") {
		t.Errorf("render %v:\n%s", err, out.String())
	}
	out.Reset()
	var back blast.Summary
	if err := s.WriteJSON(&out); err != nil || json.Unmarshal(out.Bytes(), &back) != nil || back.Sold != 2 {
		t.Errorf("json %v: %s", err, out.String())
	}
}

// TestSummaryTail: 10,000 answers at 1..10,000 ms give min, mean and the far tail (p99.9,
// p99.99) within the histogram's 3 significant digits, in the table and the JSON alike; the
// protocol is named from the answers (h2 over TLS, with counts when they differ).
func TestSummaryTail(t *testing.T) {
	at := time.Unix(1000, 0)
	res := &loadgen.Result{At: at, Released: at, Buyers: 10_000, Conns: 1}
	for i := 1; i <= 10_000; i++ {
		res.Records = append(res.Records, loadgen.Record{Buyer: i, Key: fmt.Sprint("k", i), Outcome: outcome.SoldOut,
			Intended: at, Attempt: 1, Started: at, Done: at.Add(time.Duration(i) * time.Millisecond),
			Proto: "HTTP/2.0", URL: "https://shop.test/buy"})
	}
	s := blast.Summarize(res, nil)
	d := s.Latency
	near := func(got, want float64) bool { return got >= want*0.999 && got <= want*1.001 }
	if !near(d.Min, 1) || !near(d.Mean, 5000.5) || !near(d.P50, 5000) || !near(d.P999, 9990) || !near(d.P9999, 9999) || !near(d.Max, 10_000) {
		t.Errorf("distribution %+v, want min 1, mean 5000.5, p50 5000, p99.9 9990, p99.99 9999, max 10000", d)
	}
	if s.Protocol != "h2" {
		t.Errorf("protocol %q, want h2", s.Protocol)
	}
	var out bytes.Buffer
	if err := s.Render(&out); err != nil || !strings.Contains(out.String(), "P99.9 MS") || !strings.Contains(out.String(), "P99.99 MS") ||
		!strings.Contains(out.String(), "pool of 1 h2 connections") {
		t.Errorf("render %v:\n%s", err, out.String())
	}
	out.Reset()
	if err := s.WriteJSON(&out); err != nil || !strings.Contains(out.String(), `"p9999Ms"`) || !strings.Contains(out.String(), `"minMs": 1`) {
		t.Errorf("json %v: %s", err, out.String())
	}

	res.Records[0].Proto, res.Records[0].URL = "HTTP/1.1", "http://shop.test/buy"
	if s := blast.Summarize(res, nil); s.Protocol != "HTTP/1.1 (1), h2 (9999)" {
		t.Errorf("mixed protocol %q, want each with its count", s.Protocol)
	}
}
