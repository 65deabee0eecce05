package loadgen_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fsctl/fsctl/auth"
	"github.com/fsctl/fsctl/loadgen"
	"github.com/fsctl/fsctl/outcome"
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
		})
	}
}
