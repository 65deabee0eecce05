package blast

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/fsctl/fsctl/internal/contract/outcome"
	"github.com/fsctl/fsctl/internal/target/profile"
	"github.com/fsctl/fsctl/loadgen"
)

// BenchmarkMetricsObserve is the export's cost on the hot path: what every settled attempt of an
// http-engine burst pays with --metrics-remote-write, from every CPU at once as a burst does.
func BenchmarkMetricsObserve(b *testing.B) {
	m := newMetrics()
	at := time.Now()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		r := loadgen.Record{Outcome: outcome.SoldOut, Intended: at, Done: at.Add(42 * time.Millisecond)}
		for pb.Next() {
			m.observe(&r)
		}
	})
}

// BenchmarkBurstMetrics fires the same burst at a trivial in-process checkout with the export off
// and on (pushing every 100 ms, ten times the default rate, to an in-process receiver), in the
// same iteration, and reports each one's requests per second from the release to the last answer
// and their ratio: on a 2-core box the buyers, the checkout and the pushes share the CPUs, so
// only the ratio means something, and only over several iterations (-benchtime 6x).
func BenchmarkBurstMetrics(b *testing.B) {
	shop := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/healthz" {
			return
		}
		w.WriteHeader(http.StatusGone)
		_, _ = io.WriteString(w, `{"error":"SOLD_OUT"}`)
	}))
	b.Cleanup(shop.Close)
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.WriteHeader(http.StatusNoContent)
	}))
	b.Cleanup(receiver.Close)
	const buyers = 10_000
	target := loadgen.Target{SaleID: "bench", ItemID: "item"}
	burst := func(b *testing.B, engine string, rw RemoteWrite) float64 {
		p := loadgen.Plan{BaseURL: shop.URL, Targets: []loadgen.Target{target}, Buyers: buyers, UserPrefix: "bench-",
			Secret: []byte("bench-secret-0123456789"), Clicks: 1, Conns: 200, Timeout: time.Minute, Engine: engine,
			Profile: profile.Default(), At: time.Now().Add(time.Second + buyers*40*time.Microsecond)}
		rep, err := Fire(context.Background(), Burst{Plan: p, Limits: map[loadgen.Target]loadgen.ItemLimit{target: {Stock: 1, PerUser: 1}},
			Thresholds: Thresholds{ExpectSold: -1}, Metrics: rw}, io.Discard)
		if err != nil {
			b.Fatal(err)
		}
		s := rep.Summary
		if s.Requests != buyers || len(s.Outcomes) != 1 || (rw.URL != "" && (s.Metrics == nil || s.Metrics.Failed > 0)) {
			b.Fatalf("%d requests, outcomes %+v, metrics %+v", s.Requests, s.Outcomes, s.Metrics)
		}
		return float64(s.Requests) / ((s.DurationMs - s.ReleaseLateMs) / 1000)
	}
	for _, engine := range []string{loadgen.EngineHTTP, loadgen.EngineRaw} {
		b.Run(engine, func(b *testing.B) {
			export := RemoteWrite{URL: receiver.URL + "/api/v1/write", Interval: 100 * time.Millisecond}
			var off, on float64
			// Whichever burst runs second finds the process warmer: they take turns going first.
			for i := 0; b.Loop(); i++ {
				if i%2 == 0 {
					off += burst(b, engine, RemoteWrite{})
					on += burst(b, engine, export)
				} else {
					on += burst(b, engine, export)
					off += burst(b, engine, RemoteWrite{})
				}
			}
			b.ReportMetric(off/float64(b.N), "off-req/s")
			b.ReportMetric(on/float64(b.N), "on-req/s")
			b.ReportMetric(on/off, "on/off")
		})
	}
}
