package loadgen_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fsctl/fsctl/internal/checkout/auth"
	"github.com/fsctl/fsctl/internal/contract/outcome"
	"github.com/fsctl/fsctl/loadgen"
)

// TestRunSendsEveryBuyerOnce checks, on both engines, that every buyer is a distinct user with
// its own token and key, sends exactly one request, and that the answers are classified by the
// bundled server's profile when the plan gives no classifier.
func TestRunSendsEveryBuyerOnce(t *testing.T) {
	secret := []byte("loadgen-test-secret-0123456789ab")
	v, _ := auth.NewVerifier(secret, nil)
	for _, engine := range []string{loadgen.EngineHTTP, loadgen.EngineRaw} {
		t.Run(engine, func(t *testing.T) {
			var sold atomic.Int64
			seen := make(chan string, 100)
			ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path == "/healthz" {
					return
				}
				user, err := v.UserFromHeader(r.Header.Get("Authorization"))
				if err != nil || !strings.HasPrefix(r.Header.Get("Idempotency-Key"), user+"-") || !strings.HasSuffix(r.URL.Path, "/sales/s/items/i/purchase") {
					w.WriteHeader(http.StatusBadRequest)
					return
				}
				seen <- user
				if sold.Add(1) <= 10 {
					w.WriteHeader(http.StatusAccepted)
					_, _ = w.Write([]byte(`{"orderId":"` + user + `"}`))
					return
				}
				w.WriteHeader(http.StatusGone)
				_, _ = w.Write([]byte(`{"error":"SOLD_OUT"}`))
			}))
			defer ts.Close()
			res, err := loadgen.Run(context.Background(), loadgen.Plan{BaseURL: ts.URL, Targets: []loadgen.Target{{SaleID: "s", ItemID: "i"}},
				Buyers: 100, UserPrefix: "b", Secret: secret, Clicks: 1, Conns: 8, At: time.Now(), Engine: engine})
			if err != nil {
				t.Fatal(err)
			}
			close(seen)
			users := map[string]bool{}
			for u := range seen {
				if users[u] {
					t.Fatalf("buyer %s sent twice", u)
				}
				users[u] = true
			}
			counts := map[outcome.Code]int{}
			for _, r := range res.Records {
				counts[r.Outcome]++
			}
			if len(users) != 100 || len(res.Records) != 100 || counts[outcome.Reserved] != 10 || counts[outcome.SoldOut] != 90 {
				t.Fatalf("%d buyers seen, %d records, counts %v", len(users), len(res.Records), counts)
			}
			for _, r := range res.Records { // each answer's own order id, however alike the answers
				if r.Outcome == outcome.Reserved && r.OrderID != r.User || r.Outcome != outcome.Reserved && r.OrderID != "" {
					t.Errorf("buyer %s: %s with order id %q", r.User, r.Outcome, r.OrderID)
				}
			}
			if res.PrepareCPU <= 0 || res.BurstCPU <= 0 {
				t.Errorf("the generator's CPU not counted: %s before the release, %s after", res.PrepareCPU, res.BurstCPU)
			}
		})
	}
}

// TestRetryAfterIsHonoured checks the buyer who honours Retry-After: a 503 PAUSED (which a plan
// that retries at once takes as the answer) is retried, each retry waits what the header asked
// (capped by the plan; a date already past, not at all), and the retries stop at the first definitive answer; without RetryAfter
// the same server gets one try per buyer.
func TestRetryAfterIsHonoured(t *testing.T) {
	secret := []byte("loadgen-test-secret-0123456789ab")
	for _, tc := range []struct {
		name       string
		retryAfter time.Duration
		header     string
		tries      int
		minGap     time.Duration
	}{
		{"at once", 0, "1", 1, 0},
		{"seconds, capped", 300 * time.Millisecond, "1", 3, 250 * time.Millisecond},
		{"http date", 2 * time.Second, "date", 3, time.Second}, // 2.5 s ahead, whole seconds: at least 1.5 s
		{"no header", time.Second, "", 1, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var calls atomic.Int64
			ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path == "/healthz" {
					return
				}
				if calls.Add(1) < 3 {
					switch tc.header {
					case "":
					case "date":
						w.Header().Set("Retry-After", time.Now().Add(2500*time.Millisecond).UTC().Format(http.TimeFormat))
					default:
						w.Header().Set("Retry-After", tc.header)
					}
					w.WriteHeader(http.StatusServiceUnavailable)
					_, _ = w.Write([]byte(`{"error":"PAUSED"}`))
					return
				}
				w.WriteHeader(http.StatusGone)
				_, _ = w.Write([]byte(`{"error":"SOLD_OUT"}`))
			}))
			defer ts.Close()
			res, err := loadgen.Run(context.Background(), loadgen.Plan{BaseURL: ts.URL, Targets: []loadgen.Target{{SaleID: "s", ItemID: "i"}},
				Buyers: 1, UserPrefix: "b", Secret: secret, Clicks: 1, Retries: 5, RetryAfter: tc.retryAfter, Conns: 1, At: time.Now(),
				Engine: loadgen.EngineHTTP})
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Records) != tc.tries {
				t.Fatalf("%d tries, want %d: %+v", len(res.Records), tc.tries, res.Records)
			}
			last := res.Records[len(res.Records)-1]
			if tc.tries > 1 && last.Outcome != outcome.SoldOut {
				t.Fatalf("last try %s, want the definitive SOLD_OUT", last.Outcome)
			}
			for i := 1; i < len(res.Records); i++ {
				gap := res.Records[i].Started.Sub(res.Records[i-1].Done)
				if i == 1 && gap < tc.minGap || gap > tc.retryAfter+time.Second {
					t.Errorf("retry %d waited %s, want between %s and %s", i, gap, tc.minGap, tc.retryAfter+time.Second)
				}
			}
			if tc.header == "1" && res.Records[0].RetryAfter != time.Second {
				t.Errorf("Retry-After 1 read as %s", res.Records[0].RetryAfter)
			}
		})
	}
}
