package blast_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
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

func TestRawEngineReadsAnswersInPieces(t *testing.T) {
	// A server by hand, so an answer can be cut anywhere: some come whole, some in two writes
	// cut inside their headers, some 40 KB long (more than a read buffer's first size) by length
	// or in chunks, written a piece at a time. Each must still be read whole and paired with its
	// own buyer.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	var n atomic.Int64
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			go servePieces(conn, &n)
		}
	}()
	res, err := loadgen.Run(context.Background(), rawPlan("http://"+ln.Addr().String(), 1000, 4))
	if err != nil {
		t.Fatal(err)
	}
	counts := oneEach(t, res, 1000)
	if counts[outcome.Reserved] != 1000 {
		t.Fatalf("outcomes %v, want 1000 RESERVED", counts)
	}
	for _, r := range res.Records {
		if r.OrderID != "o-"+r.Key || r.FirstByte.Before(r.Written) || r.Done.Before(r.FirstByte) {
			t.Fatalf("buyer %d with key %s: order %q, record %+v", r.Buyer, r.Key, r.OrderID, r)
		}
	}
}

// servePieces answers a connection's purchases with 202 and the key's order id, each answer in
// one of four shapes by its number n.
func servePieces(conn net.Conn, n *atomic.Int64) {
	defer conn.Close()
	br := bufio.NewReader(conn)
	pad := strings.Repeat("x", 40<<10)
	for {
		req, err := http.ReadRequest(br)
		if err != nil {
			return
		}
		_, _ = io.Copy(io.Discard, req.Body)
		key := req.Header.Get("Idempotency-Key")
		if req.URL.Path == "/healthz" {
			key = "health"
		}
		body := fmt.Sprintf(`{"orderId":"o-%s"}`, key)
		var pieces []string
		switch i := n.Add(1); i % 4 {
		case 0: // whole
			pieces = []string{answer(body, false)}
		case 1: // cut inside the headers
			a := answer(body, false)
			cut := 10 + int(i)%30
			pieces = []string{a[:cut], a[cut:]}
		case 2: // long, by length, cut inside the body
			a := answer(fmt.Sprintf(`{"orderId":"o-%s","pad":"%s"}`, key, pad), false)
			pieces = []string{a[:len(a)/3], a[len(a)/3 : 2*len(a)/3], a[2*len(a)/3:]}
		default: // long, in chunks, cut inside the chunks' framing
			a := answer(fmt.Sprintf(`{"orderId":"o-%s","pad":"%s"}`, key, pad), true)
			for len(a) > 0 {
				k := min(len(a), 7001)
				pieces, a = append(pieces, a[:k]), a[k:]
			}
		}
		for j, p := range pieces {
			if j > 0 {
				time.Sleep(200 * time.Microsecond)
			}
			if _, err := io.WriteString(conn, p); err != nil {
				return
			}
		}
	}
}

// answer is a 202 with body, by length or in chunks of 10,000 bytes.
func answer(body string, chunked bool) string {
	if !chunked {
		return fmt.Sprintf("HTTP/1.1 202 Accepted\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
	}
	var b strings.Builder
	b.WriteString("HTTP/1.1 202 Accepted\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n")
	for len(body) > 0 {
		k := min(len(body), 10000)
		fmt.Fprintf(&b, "%x\r\n%s\r\n", k, body[:k])
		body = body[k:]
	}
	b.WriteString("0\r\n\r\n")
	return b.String()
}

func TestRawEngineStopsWhenCancelled(t *testing.T) {
	// The server holds every purchase: a cancel mid-burst ends the run at once, each buyer
	// recorded with the cancel, not left to the 10 s timeout.
	hold := make(chan struct{})
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/healthz" {
			<-hold
		}
	}))
	t.Cleanup(hs.Close)
	t.Cleanup(func() { close(hold) }) // before hs.Close, which waits for the handlers
	p := rawPlan(hs.URL, 200, 4)
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(time.Until(p.At)+200*time.Millisecond, cancel)
	res, err := loadgen.Run(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	counts := oneEach(t, res, 200)
	for _, r := range res.Records {
		if r.Outcome != loadgen.TransportError || !strings.Contains(r.Error, context.Canceled.Error()) {
			t.Fatalf("outcomes %v; buyer %d: %s %q, want TRANSPORT_ERROR with the cancel", counts, r.Buyer, r.Outcome, r.Error)
		}
	}
}
