package blast_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fsctl/fsctl/blast"
	"github.com/fsctl/fsctl/internal/contract/outcome"
	"github.com/fsctl/fsctl/loadgen"
)

// directPlan is a valid direct purchase to an http:// target, engine and timeout left to auto.
func directPlan() loadgen.Plan {
	p := plan("http://127.0.0.1:1", []loadgen.Target{hot}, 100)
	p.Engine, p.Timeout = "", 0
	return p
}

// TestAutoEngine: auto runs a direct purchase on raw and falls back to http, saying why in
// rawSupported's own words, for what raw cannot send; an explicit engine is kept.
func TestAutoEngine(t *testing.T) {
	for _, tc := range []struct {
		name     string
		mod      func(*loadgen.Plan)
		engine   string
		auto     bool
		fallback string // a word the reason must contain; "" means no fallback
	}{
		{"default direct purchase", func(*loadgen.Plan) {}, loadgen.EngineRaw, true, ""},
		{"auto direct purchase", func(p *loadgen.Plan) { p.Engine = loadgen.EngineAuto }, loadgen.EngineRaw, true, ""},
		{"open model", func(p *loadgen.Plan) { p.Schedule = &loadgen.Schedule{Rate: 100} }, loadgen.EngineRaw, true, ""},
		{"retries", func(p *loadgen.Plan) { p.Retries = 2 }, loadgen.EngineHTTP, true, "retries"},
		{"replays", func(p *loadgen.Plan) { p.Replays = 1 }, loadgen.EngineHTTP, true, "replays"},
		{"pay step", func(p *loadgen.Plan) { p.After = &loadgen.AfterPurchase{Pay: 1} }, loadgen.EngineHTTP, true, "pay"},
		{"page refreshes", func(p *loadgen.Plan) { p.Refresh = &loadgen.Refresh{Before: 10, Window: time.Second, Share: 1} }, loadgen.EngineRaw, true, ""},
		{"order polling", func(p *loadgen.Plan) { p.Poll = &loadgen.OrderPoll{Interval: time.Millisecond, Wait: time.Second} }, loadgen.EngineHTTP, true, "polling"},
		{"https target", func(p *loadgen.Plan) { p.BaseURL = "https://shop.example" }, loadgen.EngineHTTP, true, "http://"},
		{"waiting room", func(p *loadgen.Plan) { p.Journey = &loadgen.Room{MaxPoll: time.Second, Wait: time.Minute} }, loadgen.EngineHTTP, true, "journey"},
		{"explicit http", func(p *loadgen.Plan) { p.Engine = loadgen.EngineHTTP }, loadgen.EngineHTTP, false, ""},
		{"explicit raw", func(p *loadgen.Plan) { p.Engine = loadgen.EngineRaw }, loadgen.EngineRaw, false, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := directPlan()
			tc.mod(&p)
			if err := p.Validate(); err != nil {
				t.Fatalf("plan refused: %v", err)
			}
			r := p.Resolve()
			if r.Engine != tc.engine || r.EngineAuto != tc.auto || (r.Fallback != "") != (tc.fallback != "") ||
				!strings.Contains(r.Fallback, tc.fallback) {
				t.Fatalf("resolved %+v, want engine %s (auto %v) with a reason naming %q", r, tc.engine, tc.auto, tc.fallback)
			}
			if tc.fallback == "" {
				return
			}
			// The reason is exactly what an explicit --engine raw is refused with.
			p.Engine = loadgen.EngineRaw
			if err := p.Validate(); err == nil || err.Error() != r.Fallback {
				t.Errorf("explicit raw refused with %v, auto's reason %q", err, r.Fallback)
			}
		})
	}
}

// TestAutoTimeout: no timeout is 10 s plus a second per 2,000 clicks of the whole burst; an
// explicit one wins.
func TestAutoTimeout(t *testing.T) {
	for _, tc := range []struct {
		name   string
		mod    func(*loadgen.Plan)
		want   time.Duration
		isAuto bool
	}{
		{"50,000 buyers", func(p *loadgen.Plan) { p.Buyers = 50000 }, 35 * time.Second, true},
		{"one buyer", func(p *loadgen.Plan) { p.Buyers = 1 }, 10*time.Second + 500*time.Microsecond, true},
		{"clicks count", func(p *loadgen.Plan) { p.Buyers, p.Clicks = 10000, 3 }, 25 * time.Second, true},
		{"whole burst, not the shard", func(p *loadgen.Plan) { p.Buyers, p.Shard = 50000, loadgen.Shard{Index: 1, Count: 4} }, 35 * time.Second, true},
		{"explicit", func(p *loadgen.Plan) { p.Buyers, p.Timeout = 50000, 3*time.Second }, 3 * time.Second, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := directPlan()
			tc.mod(&p)
			r := p.Resolve()
			if r.Timeout != tc.want || r.TimeoutAuto != tc.isAuto {
				t.Errorf("timeout %s (auto %v), want %s (auto %v)", r.Timeout, r.TimeoutAuto, tc.want, tc.isAuto)
			}
		})
	}
}

// TestRunUsesTheResolution: a plan with neither engine nor timeout runs on raw (its purchases
// come without the Accept-Encoding that net/http's transport adds) under the auto timeout, not a
// zero deadline that would time every answer out, and its result and report say so.
func TestRunUsesTheResolution(t *testing.T) {
	var viaHTTP atomic.Int64
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/healthz" {
			return
		}
		if r.Header.Get("Accept-Encoding") != "" {
			viaHTTP.Add(1)
		}
		time.Sleep(20 * time.Millisecond)
		w.WriteHeader(http.StatusGone)
		w.Write([]byte(`{"error":"SOLD_OUT"}`))
	}))
	t.Cleanup(hs.Close)
	p := plan(hs.URL, []loadgen.Target{hot}, 20)
	p.Engine, p.Timeout, p.Conns, p.At = "", 0, 4, time.Now().Add(300*time.Millisecond)
	res, err := loadgen.Run(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	want := loadgen.Resolution{Engine: loadgen.EngineRaw, EngineAuto: true, Timeout: p.AutoTimeout(), TimeoutAuto: true}
	if res.Resolved != want || viaHTTP.Load() != 0 {
		t.Fatalf("resolved %+v, %d purchases through net/http; want %+v, none", res.Resolved, viaHTTP.Load(), want)
	}
	if counts := oneEach(t, res, 20); counts[outcome.SoldOut] != 20 {
		t.Fatalf("outcomes %v, want every buyer answered SOLD_OUT within the auto timeout", counts)
	}
	p.Retries = 1 // raw cannot retry: auto falls back to net/http
	if res, err = loadgen.Run(context.Background(), withRelease(p)); err != nil {
		t.Fatal(err)
	}
	if res.Resolved.Engine != loadgen.EngineHTTP || res.Resolved.Fallback == "" || viaHTTP.Load() == 0 {
		t.Errorf("with retries: resolved %+v, %d purchases through net/http", res.Resolved, viaHTTP.Load())
	}
}

func withRelease(p loadgen.Plan) loadgen.Plan {
	p.At = time.Now().Add(300 * time.Millisecond)
	return p
}

// TestReportNamesEngineAndTimeout: the table and the JSON both say which engine and timeout
// produced the numbers, and why auto did not pick raw.
func TestReportNamesEngineAndTimeout(t *testing.T) {
	p := directPlan()
	p.Buyers, p.Retries = 50000, 1
	res := &loadgen.Result{At: time.Unix(1000, 0), Released: time.Unix(1000, 0), Resolved: p.Resolve()}
	s := blast.Summarize(res, nil)
	var out bytes.Buffer
	if err := s.Render(&out); err != nil {
		t.Fatal(err)
	}
	line := "engine: http (auto; not raw: retries and replays need --engine http); request timeout 35s (auto: 10s + 1s per 2000 clicks)"
	if !strings.Contains(out.String(), line) {
		t.Errorf("table lacks %q:\n%s", line, out.String())
	}
	out.Reset()
	if err := s.WriteJSON(&out); err != nil {
		t.Fatal(err)
	}
	var back map[string]any
	if err := json.Unmarshal(out.Bytes(), &back); err != nil {
		t.Fatal(err)
	}
	if back["engine"] != "http" || back["engineAuto"] != true || !strings.Contains(back["engineFallback"].(string), "retries") ||
		back["timeoutMs"] != 35000.0 || back["timeoutAuto"] != true {
		t.Errorf("json %s", out.String())
	}
	var page bytes.Buffer
	if err := blast.WriteHTML(&page, s, nil); err != nil || !strings.Contains(page.String(), "not raw: retries") {
		t.Errorf("html report: %v, lacks the engine", err)
	}
}

// TestMergedReportKeepsTheResolution: the records header carries the engine and timeout, so
// the merged report names them; shards that ran differently name both engines.
func TestMergedReportKeepsTheResolution(t *testing.T) {
	at := time.Unix(2000, 0)
	shard := func(i int, r loadgen.Resolution) loadgen.RecordFile {
		p := loadgen.Plan{Buyers: 4, Shard: loadgen.Shard{Index: i, Count: 2}}
		res := &loadgen.Result{At: at, Buyers: 2, Conns: 1, Resolved: r}
		var buf bytes.Buffer
		if err := loadgen.WriteRecords(&buf, loadgen.HeaderOf(p, res, nil), nil); err != nil {
			t.Fatal(err)
		}
		f, err := loadgen.ReadRecords(&buf)
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	raw := loadgen.Resolution{Engine: loadgen.EngineRaw, EngineAuto: true, Timeout: 35 * time.Second, TimeoutAuto: true}
	m, err := blast.Combine([]loadgen.RecordFile{shard(0, raw), shard(1, raw)})
	if err != nil || m.Result.Resolved != raw {
		t.Fatalf("merged %+v, %v; want %+v", m.Result.Resolved, err, raw)
	}
	explicit := loadgen.Resolution{Engine: loadgen.EngineHTTP, Timeout: time.Minute}
	m, err = blast.Combine([]loadgen.RecordFile{shard(0, raw), shard(1, explicit)})
	if err != nil || m.Result.Resolved.Engine != "raw+http" || m.Result.Resolved.Timeout != time.Minute {
		t.Fatalf("mixed shards merged as %+v, %v", m.Result.Resolved, err)
	}
}
