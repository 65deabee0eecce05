package loadgen_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fsctl/fsctl/internal/contract/outcome"
	"github.com/fsctl/fsctl/loadgen"
)

// revealSeller is a checkout that reveals purchase paths: every GET .../purchase-path hands out a
// new numbered path, and a purchase through path number n answers refuse(n) (403) or 202.
func revealSeller(t *testing.T, refuse func(n int) bool) (string, func() []string) {
	var mu sync.Mutex
	issued := 0
	var seen []string
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		if r.Header.Get("Authorization") == "" {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		switch {
		case r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/purchase-path"):
			issued++
			fmt.Fprintf(w, `{"purchasePath":%q}`, strings.TrimSuffix(r.URL.Path, "-path")+fmt.Sprintf("/tok%d", issued))
		case r.Method == http.MethodPost && strings.Contains(r.URL.Path, "/purchase/tok"):
			seen = append(seen, r.URL.Path[strings.LastIndex(r.URL.Path, "/")+1:])
			var n int
			fmt.Sscanf(r.URL.Path[strings.LastIndex(r.URL.Path, "/tok")+4:], "%d", &n)
			if refuse(n) || r.Header.Get("Idempotency-Key") == "" {
				w.WriteHeader(http.StatusForbidden)
				fmt.Fprint(w, `{"error":"FORBIDDEN","message":"purchase path is invalid or expired"}`)
				return
			}
			w.WriteHeader(http.StatusAccepted)
			fmt.Fprintf(w, `{"orderId":"order-%d","status":"PENDING"}`, n)
		default:
			w.WriteHeader(http.StatusNotFound)
			fmt.Fprint(w, `{"error":"NOT_FOUND"}`)
		}
	}))
	t.Cleanup(hs.Close)
	return hs.URL, func() []string { mu.Lock(); defer mu.Unlock(); return append([]string(nil), seen...) }
}

func revealPlan(base string) loadgen.Plan {
	return loadgen.Plan{BaseURL: base, Targets: []loadgen.Target{{SaleID: "s", ItemID: "i"}}, Buyers: 1, UserPrefix: "b-",
		Secret: []byte("loadgen-test-secret-0123456789"), Clicks: 1, Conns: 1, Timeout: 5 * time.Second, At: time.Now()}
}

// TestRevealRefetchesAfter403: a purchase through a path the server no longer takes (403) gets a
// new path once and buys through it; a 403 through the path fetched just before is the answer.
func TestRevealRefetchesAfter403(t *testing.T) {
	base, _ := revealSeller(t, func(n int) bool { return n == 1 })
	j := &loadgen.Reveal{}
	p := revealPlan(base)
	p.Journey = j
	res, err := loadgen.Run(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	// The first path was fetched in this very try, so its 403 is final: no refetch.
	if r := res.Records[0]; r.Outcome != loadgen.ClientError || r.Status != http.StatusForbidden || !strings.Contains(r.Error, "403") {
		t.Fatalf("record %+v: want the 403 through a fresh path", r)
	}
	if c := j.Counts(); c != (loadgen.RevealCounts{Fetched: 1, Refused: 1}) {
		t.Fatalf("counts %+v", c)
	}

	// A retried click keeps its path; when that one is refused it fetches a new one and buys.
	base, seen := revealSeller(t, func(n int) bool { return n == 1 })
	j = &loadgen.Reveal{}
	p = revealPlan(base)
	p.Journey = j
	a, err := j.Prepare(p, p.Roster()[0], "key-1", "token")
	if err != nil {
		t.Fatal(err)
	}
	var rec loadgen.Record
	a(context.Background(), http.DefaultClient, &rec) // tok1: 403, final for this try
	rec = loadgen.Record{}
	a(context.Background(), http.DefaultClient, &rec) // a new try: tok2 at once
	if rec.Outcome != outcome.Reserved || rec.OrderID != "order-2" {
		t.Fatalf("second try %+v: want RESERVED through a new path", rec)
	}
	if got := strings.Join(seen(), ","); got != "tok1,tok2" {
		t.Fatalf("purchases through %s, want tok1,tok2", got)
	}
	if c := j.Counts(); c != (loadgen.RevealCounts{Fetched: 2, Refused: 1}) {
		t.Fatalf("counts %+v", c)
	}
}

// TestRevealKeepsThePathAcrossTries: a path that worked is reused by the click's next try (a
// replay), and a kept path answered 403 is fetched anew within the same try.
func TestRevealKeepsThePathAcrossTries(t *testing.T) {
	refused := map[int]bool{}
	base, seen := revealSeller(t, func(n int) bool { return refused[n] })
	j := &loadgen.Reveal{}
	p := revealPlan(base)
	p.Journey = j
	a, err := j.Prepare(p, p.Roster()[0], "key-1", "token")
	if err != nil {
		t.Fatal(err)
	}
	var rec loadgen.Record
	a(context.Background(), http.DefaultClient, &rec)
	a(context.Background(), http.DefaultClient, &rec) // replay: same path
	refused[1] = true                                 // the path expires
	a(context.Background(), http.DefaultClient, &rec) // 403, refetch, 202
	if rec.Outcome != outcome.Reserved || rec.OrderID != "order-2" {
		t.Fatalf("after the path expired %+v: want RESERVED through a new path", rec)
	}
	if got := strings.Join(seen(), ","); got != "tok1,tok1,tok1,tok2" {
		t.Fatalf("purchases through %s, want tok1,tok1,tok1,tok2", got)
	}
	if c := j.Counts(); c != (loadgen.RevealCounts{Fetched: 2, Refetched: 1}) {
		t.Fatalf("counts %+v", c)
	}
}

// TestRevealNeedsHTTP: the raw engine cannot follow a revealed path; auto falls back to http and
// says why, an explicit raw is refused.
func TestRevealNeedsHTTP(t *testing.T) {
	p := revealPlan("http://127.0.0.1:1")
	p.Journey = &loadgen.Reveal{}
	if r := p.Resolve(); r.Engine != loadgen.EngineHTTP || !strings.Contains(r.Fallback, "--engine http") {
		t.Fatalf("auto with reveal: %+v", r)
	}
	p.Engine = loadgen.EngineRaw
	if err := p.Validate(); err == nil || !strings.Contains(err.Error(), "reveals its purchase path") {
		t.Fatalf("raw with reveal: %v", err)
	}
	p.Engine, p.Journey = loadgen.EngineAuto, &loadgen.Room{Reveal: &loadgen.Reveal{}}
	if !p.Reveals() || p.Resolve().Engine != loadgen.EngineHTTP {
		t.Fatal("a waiting room with reveal must follow it on the http engine")
	}
}
