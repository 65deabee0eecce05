package blast_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/fsctl/fsctl/loadgen"
)

// TestAnsweredCountsEveryClickOnce: the progress counter ends at the number of clicks on both
// engines, failures and retries included, so "answered" during a burst never runs past the total.
func TestAnsweredCountsEveryClickOnce(t *testing.T) {
	var calls atomic.Int64
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/healthz" {
			return
		}
		if calls.Add(1)%7 == 0 {
			w.WriteHeader(http.StatusInternalServerError)
			return
		}
		w.WriteHeader(http.StatusGone)
		w.Write([]byte(`{"error":"SOLD_OUT"}`)) //nolint:errcheck
	}))
	defer hs.Close()
	for _, engine := range []string{loadgen.EngineHTTP, loadgen.EngineRaw} {
		t.Run(engine, func(t *testing.T) {
			p := rawPlan(hs.URL, 300, 8)
			p.Engine, p.Clicks = engine, 2
			if engine == loadgen.EngineHTTP {
				p.Retries = 1
			}
			p.Answered = new(atomic.Int64)
			res, err := loadgen.Run(context.Background(), p)
			if err != nil {
				t.Fatal(err)
			}
			if got := p.Answered.Load(); got != 600 {
				t.Fatalf("answered %d, want 600 clicks (records %d)", got, len(res.Records))
			}
		})
	}
}
