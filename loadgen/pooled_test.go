package loadgen

import (
	"context"
	"net/http"
	"net/http/httptest"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fsctl/fsctl/internal/contract/outcome"
)

// soldOut is a checkout that answers every purchase SOLD_OUT after delay, keeping the most
// goroutines this process had while it answered.
func soldOut(t *testing.T, delay time.Duration, most *atomic.Int64) string {
	t.Helper()
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/healthz" {
			return
		}
		if n := int64(runtime.NumGoroutine()); most != nil && n > most.Load() {
			most.Store(n) // racy max; good enough for an upper bound far from the limit
		}
		time.Sleep(delay)
		w.WriteHeader(http.StatusGone)
		_, _ = w.Write([]byte(`{"error":"SOLD_OUT"}`))
	}))
	t.Cleanup(ts.Close)
	return ts.URL
}

func pooledPlan(base string, buyers, conns int) Plan {
	return Plan{BaseURL: base, Targets: []Target{{SaleID: "s", ItemID: "i"}}, Buyers: buyers, UserPrefix: "b",
		Secret: []byte("loadgen-test-secret-0123456789ab"), Clicks: 1, Conns: conns, At: time.Now(),
		Engine: EngineHTTP, Timeout: time.Minute}
}

// TestPooledBurstRunsOnAGoroutinePerConnection: 2,000 direct buys over 8 HTTP/1.1 connections
// on the net/http engine are all answered while the process never holds anywhere near a
// goroutine per buyer (it held over 2,000 when each buyer had its own).
func TestPooledBurstRunsOnAGoroutinePerConnection(t *testing.T) {
	var most atomic.Int64
	p := pooledPlan(soldOut(t, 0, &most), 2000, 8)
	if !p.pooled() {
		t.Fatal("a direct buy over http:// is not pooled")
	}
	res, err := Run(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	sold := 0
	for _, r := range res.Records {
		if r.Outcome == outcome.SoldOut && r.Attempt == 1 && !r.Started.Before(res.Released) {
			sold++
		}
	}
	if len(res.Records) != 2000 || sold != 2000 {
		t.Fatalf("%d records, %d answered SOLD_OUT after the release, want 2000", len(res.Records), sold)
	}
	if most.Load() > 500 {
		t.Fatalf("%d goroutines during a pooled burst of 2,000 buyers over 8 connections", most.Load())
	}
}

// TestPooledTimeoutCountsTheWaitForAWorker: one connection, answers that take 600 ms, and a 2 s
// timeout. The fifth buyer cannot start before 2.4 s after the release, past its timeout: it
// times out, as it did when it waited for the connection inside the client; the first is
// answered.
func TestPooledTimeoutCountsTheWaitForAWorker(t *testing.T) {
	p := pooledPlan(soldOut(t, 600*time.Millisecond, nil), 5, 1)
	p.Timeout = 2 * time.Second
	res, err := Run(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	got := map[int]outcome.Code{}
	for _, r := range res.Records {
		got[r.Buyer] = r.Outcome
	}
	if got[0] != outcome.SoldOut || got[4] != Timeout {
		t.Fatalf("outcomes by buyer %v: want the first SOLD_OUT and the fifth TIMEOUT", got)
	}
}

// TestPooled: only a plan whose every click is one HTTP/1.1 request is pooled.
func TestPooled(t *testing.T) {
	base := pooledPlan("http://shop:8080", 10, 2)
	for _, tc := range []struct {
		name string
		edit func(*Plan)
		want bool
	}{
		{"direct buy over http://", func(*Plan) {}, true},
		{"the purchase journey named", func(p *Plan) { p.Journey = Purchase{} }, true},
		{"--http 1.1 over https://", func(p *Plan) { p.BaseURL, p.HTTP = "https://shop", HTTP1 }, true},
		{"https:// may speak h2", func(p *Plan) { p.BaseURL = "https://shop" }, false},
		{"--http 2", func(p *Plan) { p.HTTP = HTTP2 }, false},
		{"retries", func(p *Plan) { p.Retries = 1 }, false},
		{"replays", func(p *Plan) { p.Replays = 1 }, false},
		{"an open model", func(p *Plan) { p.Schedule = &Schedule{} }, false},
		{"pay after", func(p *Plan) { p.After = &AfterPurchase{} }, false},
		{"order polls", func(p *Plan) { p.Poll = &OrderPoll{} }, false},
		{"the waiting room", func(p *Plan) { p.Journey = &Room{} }, false},
	} {
		p := base
		tc.edit(&p)
		if got := p.pooled(); got != tc.want {
			t.Errorf("%s: pooled = %v, want %v", tc.name, got, tc.want)
		}
	}
}
