package blast_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fsctl/fsctl/internal/contract/outcome"
	"github.com/fsctl/fsctl/loadgen"
)

// rawPlan is a burst of buyers over conns raw connections to base.
func rawPlan(base string, buyers, conns int) loadgen.Plan {
	p := plan(base, []loadgen.Target{hot}, buyers)
	p.Engine, p.Conns, p.Timeout, p.At = loadgen.EngineRaw, conns, 10*time.Second, time.Now().Add(300*time.Millisecond)
	return p
}

// echoSeller answers 202 with an order id that echoes the Idempotency-Key for the first stock
// purchases and 410 SOLD_OUT (echoing the key too) after; before answering, hook may act on the
// n-th purchase and return true when it answered itself.
func echoSeller(t *testing.T, stock int64, hook func(w http.ResponseWriter, n int64) bool) string {
	t.Helper()
	var sold, seen atomic.Int64
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/healthz" {
			return
		}
		if hook != nil && hook(w, seen.Add(1)) {
			return
		}
		key := r.Header.Get("Idempotency-Key")
		w.Header().Set("Content-Type", "application/json")
		if sold.Add(1) <= stock {
			w.WriteHeader(http.StatusAccepted)
			fmt.Fprintf(w, `{"orderId":"o-%s"}`, key)
			return
		}
		w.WriteHeader(http.StatusGone)
		fmt.Fprintf(w, `{"error":"SOLD_OUT","orderId":"o-%s"}`, key)
	}))
	t.Cleanup(hs.Close)
	return hs.URL
}

// oneEach fails unless every buyer of the plan has exactly one record, and counts the outcomes.
func oneEach(t *testing.T, res *loadgen.Result, buyers int) map[outcome.Code]int {
	t.Helper()
	per := map[int]int{}
	counts := map[outcome.Code]int{}
	for _, r := range res.Records {
		per[r.Buyer]++
		counts[r.Outcome]++
	}
	if len(res.Records) != buyers || len(per) != buyers {
		t.Fatalf("%d records for %d distinct buyers, want one for each of %d", len(res.Records), len(per), buyers)
	}
	t.Logf("outcomes %v", counts)
	return counts
}

func TestRawEngineCountsAndPairsEveryAnswer(t *testing.T) {
	base := echoSeller(t, 300, nil)
	res, err := loadgen.Run(context.Background(), rawPlan(base, 2000, 8))
	if err != nil {
		t.Fatal(err)
	}
	counts := oneEach(t, res, 2000)
	if counts[outcome.Reserved] != 300 || counts[outcome.SoldOut] != 1700 {
		t.Fatalf("outcomes %v, want 300 RESERVED and 1700 SOLD_OUT", counts)
	}
	conns := map[string]int{}
	for _, r := range res.Records {
		// Pipelined answers are read in order: a reader one answer out of step pairs a key with
		// another buyer's order id.
		if r.OrderID != "o-"+r.Key {
			t.Fatalf("buyer %d with key %s got order %q", r.Buyer, r.Key, r.OrderID)
		}
		if r.Written.Before(r.Intended) || r.FirstByte.Before(r.Written) || r.Done.Before(r.FirstByte) ||
			r.Status == 0 || r.Proto != "HTTP/1.1" || r.Method != http.MethodPost || !strings.HasPrefix(r.URL, base) {
			t.Fatalf("record incomplete or out of order: %+v", r)
		}
		conns[r.Conn]++
	}
	if len(conns) != 8 || res.Conns != 8 || res.Released.IsZero() {
		t.Fatalf("requests went over %d connections (result says %d), want 8", len(conns), res.Conns)
	}
}

func TestRawEngineSurvivesClosedConnections(t *testing.T) {
	// Every 150th purchase is answered with Connection: close, so each connection is closed under
	// its pipelined requests: they are resent once on a fresh connection or recorded as failed.
	closer := echoSeller(t, 1<<30, func(w http.ResponseWriter, n int64) bool {
		if n%150 == 0 {
			w.Header().Set("Connection", "close")
		}
		return false
	})
	res, err := loadgen.Run(context.Background(), rawPlan(closer, 2000, 8))
	if err != nil {
		t.Fatal(err)
	}
	counts := oneEach(t, res, 2000)
	if counts[outcome.Reserved]+counts[loadgen.TransportError] != 2000 || counts[outcome.Reserved] < 150 {
		t.Fatalf("outcomes %v, want RESERVED or TRANSPORT_ERROR for each of 2000", counts)
	}
	for _, r := range res.Records {
		if r.Outcome == outcome.Reserved && r.OrderID != "o-"+r.Key {
			t.Fatalf("buyer %d with key %s got order %q", r.Buyer, r.Key, r.OrderID)
		}
	}
}

func TestRawEngineRecordsGarbageAndHangups(t *testing.T) {
	hijack := func(reply string) func(http.ResponseWriter, int64) bool {
		return func(w http.ResponseWriter, n int64) bool {
			if n%7 != 0 {
				return false
			}
			conn, buf, err := http.NewResponseController(w).Hijack()
			if err != nil {
				panic(err)
			}
			buf.WriteString(reply)
			buf.Flush()
			conn.Close()
			return true
		}
	}
	for name, reply := range map[string]string{"garbage": "\x00\xffnot http at all\r\n\r\n", "hangup": ""} {
		t.Run(name, func(t *testing.T) {
			res, err := loadgen.Run(context.Background(), rawPlan(echoSeller(t, 1<<30, hijack(reply)), 400, 4))
			if err != nil {
				t.Fatal(err)
			}
			counts := oneEach(t, res, 400)
			if counts[loadgen.TransportError] == 0 || counts[outcome.Reserved]+counts[loadgen.TransportError] != 400 {
				t.Fatalf("outcomes %v, want some TRANSPORT_ERROR and the rest RESERVED", counts)
			}
			for _, r := range res.Records {
				if r.Outcome == loadgen.TransportError && r.Error == "" {
					t.Fatalf("transport error without a reason: %+v", r)
				}
			}
		})
	}
}

func TestRawEngineTimesOut(t *testing.T) {
	slow := echoSeller(t, 1<<30, func(http.ResponseWriter, int64) bool { time.Sleep(300 * time.Millisecond); return false })
	p := rawPlan(slow, 20, 4)
	p.Timeout = 50 * time.Millisecond
	res, err := loadgen.Run(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	counts := oneEach(t, res, 20)
	if counts[loadgen.Timeout] == 0 || counts[loadgen.Timeout]+counts[loadgen.TransportError] != 20 {
		t.Fatalf("outcomes %v, want TIMEOUT (then TRANSPORT_ERROR for what the dead connections held)", counts)
	}
}

func TestRawEngineRefusesWhatItCannotDo(t *testing.T) {
	tls := httptest.NewTLSServer(http.NotFoundHandler())
	t.Cleanup(tls.Close)
	for name, mod := range map[string]func(*loadgen.Plan){
		"https":   func(p *loadgen.Plan) { p.BaseURL = tls.URL },
		"retries": func(p *loadgen.Plan) { p.Retries = 1 },
		"replays": func(p *loadgen.Plan) { p.Replays = 1 },
		"after":   func(p *loadgen.Plan) { p.After = &loadgen.AfterPurchase{} },
		"engine":  func(p *loadgen.Plan) { p.Engine = "turbo" },
	} {
		t.Run(name, func(t *testing.T) {
			p := rawPlan("http://127.0.0.1:1", 10, 2)
			mod(&p)
			_, err := loadgen.Run(context.Background(), p)
			if err == nil || name != "engine" && !strings.Contains(err.Error(), "--engine http") {
				t.Fatalf("got %v, want a refusal naming --engine http", err)
			}
		})
	}
}
