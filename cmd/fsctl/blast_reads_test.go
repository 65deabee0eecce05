package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fsctl/fsctl/blast"
)

// TestBlastReadFlagErrors: a bad count, window, share, pool or poll setting is a usage error
// naming its flag, before anything is sent.
func TestBlastReadFlagErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		flag string
	}{
		{[]string{"--refreshes", "-1"}, "--refreshes"},
		{[]string{"--refreshes-after", "-2"}, "--refreshes-after"},
		{[]string{"--refreshes", "5", "--refresh-window", "0s"}, "--refresh-window"},
		{[]string{"--refreshes", "5", "--refresh-window", "-1s"}, "--refresh-window"},
		{[]string{"--refreshers", "1.5"}, "--refreshers"},
		{[]string{"--refreshers", "-0.1"}, "--refreshers"},
		{[]string{"--refreshes", "5", "--read-conns", "0"}, "--read-conns"},
		{[]string{"--poll-order", "--poll-interval", "0s"}, "--poll-interval"},
		{[]string{"--poll-order", "--poll-wait", "-1s"}, "--poll-wait"},
		{[]string{"--refreshes", "5", "--in", "3s"}, "--refresh-window"},                             // the window starts in the past
		{[]string{"--poll-order", "--engine", "raw"}, "polling"},                                     // raw cannot poll
		{[]string{"--refreshes", "x"}, "--refreshes"},                                                // not a number
		{[]string{"--poll-order", "--profile", "../../profiles/spring-article.yaml"}, "fsctl serve"}, // not fsctl serve
	} {
		_, code, err := runCLI(t, append([]string{"blast", "--sale", "s", "--item", "i"}, tc.args...)...)
		if code != exitUsage || err == nil || !strings.Contains(err.Error(), tc.flag) {
			t.Errorf("blast %v: exit %d, %v; want %d naming %s", tc.args, code, err, exitUsage, tc.flag)
		}
	}
}

// TestBlastReadFlagsMakeThePlan: without --in the release waits for the whole window; the flags
// end up in the plan.
func TestBlastReadFlagsMakeThePlan(t *testing.T) {
	o := blastOptions{target: "http://127.0.0.1:1", sale: "s", items: []string{"i"}, buyers: 10, conns: 1, clicks: 1,
		in: 2 * time.Second, shard: "0/1", secret: jwtSecretFlag{value: "x"}, stock: -1, limit: -1, maxPoll: time.Second,
		roomWait: time.Minute, seed: 3, reads: readFlags{before: 10, after: 2, window: 5 * time.Second, share: 0.5, conns: 8,
			poll: true, pollInterval: 50 * time.Millisecond, pollWait: time.Second}}
	now := time.Now()
	p, _, err := o.plan(now)
	if err != nil {
		t.Fatal(err)
	}
	if !p.At.Equal(now.Add(7*time.Second)) || p.ReadConns != 8 || p.Refresh == nil || p.Refresh.Before != 10 || p.Refresh.After != 2 ||
		p.Refresh.Share != 0.5 || p.Refresh.Seed != 3 || p.Poll == nil || p.Poll.Interval != 50*time.Millisecond {
		t.Errorf("plan at %s, refresh %+v, poll %+v, read conns %d", p.At.Sub(now), p.Refresh, p.Poll, p.ReadConns)
	}
}

// TestBlastReportsReadsAndPolls runs the command against a checkout that sells everything and
// persists at once: the JSON report carries the page reads apart from the purchases, and the
// order polling.
func TestBlastReportsReadsAndPolls(t *testing.T) {
	var pages, orders atomic.Int64
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path == "/healthz":
		case r.Method == http.MethodGet && r.URL.Path == "/api/v1/sales/s":
			pages.Add(1)
			fmt.Fprintf(w, `{"id":"s","perUserLimit":1,"items":[{"id":"i","quantity":100}],"serverTime":%q}`, time.Now().UTC().Format(time.RFC3339Nano))
		case r.Method == http.MethodGet && strings.HasPrefix(r.URL.Path, "/api/v1/orders/"):
			orders.Add(1)
			fmt.Fprintf(w, `{"orderId":%q,"status":"PENDING","persisted":true}`, strings.TrimPrefix(r.URL.Path, "/api/v1/orders/"))
		default:
			w.WriteHeader(http.StatusAccepted)
			fmt.Fprintf(w, `{"orderId":"order-%d"}`, orders.Add(1000))
		}
	}))
	defer hs.Close()
	out, code, err := runCLI(t, "blast", "--target", hs.URL, "--sale", "s", "--item", "i", "--buyers", "20", "--conns", "4",
		"--in", "600ms", "--refreshes", "3", "--refresh-window", "400ms", "--read-conns", "4", "--poll-order", "--poll-interval", "10ms",
		"--jwt-secret", "0123456789abcdef0123", "--output", "json")
	if code != 0 {
		t.Fatalf("exit %d (%v):\n%s", code, err, out)
	}
	var sum blast.Summary
	if err := json.Unmarshal([]byte(out), &sum); err != nil {
		t.Fatal(err)
	}
	if sum.Requests != 20 || sum.Reads == nil || sum.Reads.Requests != 60 || sum.Reads.Statuses["200"] != 60 || sum.Reads.Conns != 4 ||
		sum.Polling == nil || sum.Polling.Persisted != 20 || sum.Polling.Reserved != 20 || sum.Engine != "http" ||
		!strings.Contains(sum.EngineFallback, "polling") {
		t.Fatalf("report %+v, reads %+v, polling %+v", sum, sum.Reads, sum.Polling)
	}
	// The probe, the clock and the limits read the page too: at least the 60 loads.
	if pages.Load() < 60 {
		t.Errorf("the server saw %d page loads", pages.Load())
	}
}
