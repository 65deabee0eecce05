package loadgen

import (
	"context"
	"math"
	"net/http"
	"net/http/httptest"
	"runtime"
	"runtime/debug"
	"testing"
	"time"
)

// gcSettings reads GOGC and the memory limit without changing them.
func gcSettings() (int, int64) {
	percent := debug.SetGCPercent(100)
	debug.SetGCPercent(percent)
	return percent, debug.SetMemoryLimit(-1)
}

// TestHoldCollector: while preparations are under way the collector is off under a memory limit
// that grows with each of them; when the last one ends GOGC and the limit are what they were,
// and a GOGC=off the process runs with is left alone.
func TestHoldCollector(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(math.MaxInt64))
	endA := holdCollector(1000)
	percent, limitA := gcSettings()
	if percent != -1 || limitA == math.MaxInt64 || limitA < 1000*prepareBudget {
		t.Fatalf("during a preparation: GOGC %d, limit %d", percent, limitA)
	}
	endB := holdCollector(1000)
	if _, limitB := gcSettings(); limitB != limitA+1000*prepareBudget {
		t.Fatalf("a second preparation's limit %d, want %d", limitB, limitA+1000*prepareBudget)
	}
	endA()
	endA() // once only
	if percent, _ := gcSettings(); percent != -1 {
		t.Fatalf("GOGC %d with one preparation still under way", percent)
	}
	endB()
	if percent, limit := gcSettings(); percent != 100 || limit != math.MaxInt64 {
		t.Fatalf("after the preparations: GOGC %d, limit %d", percent, limit)
	}
	debug.SetGCPercent(-1)
	holdCollector(10)()
	if percent, limit := gcSettings(); percent != -1 || limit != math.MaxInt64 {
		t.Fatalf("GOGC=off: GOGC %d, limit %d after a preparation", percent, limit)
	}
}

// TestPrepareRunsNoCollection: 20,000 buyers are prepared without one collection between the
// first tenth and the last (their heap grows tenfold meanwhile: the default would collect
// several times), and collected once after.
func TestPrepareRunsNoCollection(t *testing.T) {
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusGone) }))
	defer ts.Close()
	var first, last uint32
	seen := false
	p := Plan{BaseURL: ts.URL, Targets: []Target{{SaleID: "s", ItemID: "i"}}, Buyers: 20000, UserPrefix: "b",
		Secret: []byte("loadgen-test-secret-0123456789ab"), Clicks: 1, Conns: 4, Engine: EngineRaw,
		At: time.Now().Add(time.Hour), Timeout: time.Minute}
	ctx, cancel := context.WithCancel(context.Background())
	p.Progress = func(done, total int) {
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		if !seen {
			seen, first = true, ms.NumGC
		}
		if done == total {
			last = ms.NumGC
			cancel() // nothing to release: the preparation is what is measured
		}
	}
	_, _ = Run(ctx, p)
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	if !seen || last != first || ms.NumGC <= last {
		t.Fatalf("collections: %d at the first tenth, %d at the end of the preparation, %d after it", first, last, ms.NumGC)
	}
}
