package blast_test

import (
	"bytes"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/fsctl/fsctl/blast"
	"github.com/fsctl/fsctl/loadgen"
)

func TestHTMLReportIsSelfContained(t *testing.T) {
	at := time.Date(2026, 11, 27, 9, 0, 0, 0, time.UTC)
	recs := shardRecords(at, 0, 1, 20, 5)
	recs[19].Outcome, recs[19].Status = loadgen.ServerError, 500
	res := &loadgen.Result{At: at, Released: at, Buyers: 20, Conns: 5, Records: recs}
	s := blast.Summarize(res, blast.CheckResponses(recs, map[loadgen.Target]loadgen.ItemLimit{hot: {Stock: 4, PerUser: 1}}))
	var buf bytes.Buffer
	if err := blast.WriteHTML(&buf, s, recs); err != nil {
		t.Fatal(err)
	}
	page := buf.String()
	count := func(re string) int { return len(regexp.MustCompile(re).FindAllString(page, -1)) }
	// One dot per request, coloured by outcome: 5 green RESERVED, 14 blue SOLD_OUT, 1 red 5xx.
	if n := count(`<circle [^>]*fill="#2e9e44"`); n != 5 {
		t.Errorf("%d RESERVED dots, want 5", n)
	}
	if n := count(`<circle [^>]*fill="#4a7fd4"`); n != 14 {
		t.Errorf("%d SOLD_OUT dots, want 14", n)
	}
	if n := count(`<circle [^>]*fill="#d43c3c"`); n != 1 {
		t.Errorf("%d SERVER_ERROR dots, want 1", n)
	}
	// Answers at 3..22 ms fall into the first 50 ms bucket: one bar per outcome.
	if n := count(`<rect [^>]*><title>`); n != 3 {
		t.Errorf("%d outcome bars, want 3", n)
	}
	// Stock depletion: one line for the item, five steps up, ending at 5 units.
	if n := count(`<polyline `); n != 1 || !strings.Contains(page, "s:hot: 5") {
		t.Errorf("%d stock lines", n)
	}
	for _, want := range []string{
		"<svg", "Latency over time", "Outcomes over time", "Stock depletion", "<th>p99.9 ms</th><th>p99.99 ms</th>",
		"<td>RESERVED</td><td>5</td>", "<td>SOLD_OUT</td><td>14</td>", "<b>5 sold</b>",
		"BROKEN</span> no oversell (responses)", "s:hot: 5 reservations for 4 units", // the verdicts
		"<td>s:hot</td><td>written</td><td>20</td><td>5</td><td>5</td><td>1.00</td>", // fairness
	} {
		if !strings.Contains(page, want) {
			t.Errorf("report lacks %q", want)
		}
	}
	for _, bad := range []string{"<script", "http://", "https://cdn", "ZgotmplZ"} {
		if bad == "http://" {
			// the SVG namespace is the only URL a self-contained page carries
			page = strings.ReplaceAll(page, `xmlns="http://www.w3.org/2000/svg"`, "")
		}
		if strings.Contains(page, bad) {
			t.Errorf("report contains %q", bad)
		}
	}
}

func TestHTMLReportOfNothing(t *testing.T) {
	var buf bytes.Buffer
	if err := blast.WriteHTML(&buf, blast.Summary{}, nil); err != nil || !strings.Contains(buf.String(), "<svg") {
		t.Errorf("empty report: %v", err)
	}
}
