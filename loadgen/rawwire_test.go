package loadgen

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/fsctl/fsctl/internal/checkout/auth"
	"github.com/fsctl/fsctl/internal/contract/outcome"
)

func TestAppendWireJoinsOnlyBackToBack(t *testing.T) {
	var w wireScratch
	a, b := w.keep([]byte("GET /a\r\n\r\n")), w.keep([]byte("GET /b\r\n\r\n"))
	other := []byte("GET /c\r\n\r\n") // a heap object of its own
	iov := appendWire(appendWire(nil, a), b)
	if len(iov) != 1 || string(iov[0]) != string(a)+string(b) {
		t.Fatalf("back to back: %q, want one piece", iov)
	}
	iov = appendWire(iov, other)
	if len(iov) != 2 || string(iov[1]) != string(other) {
		t.Fatalf("apart: %q, want a second piece", iov)
	}
	// b's bytes lie right after a's, but a piece that skips one does not swallow the next.
	skip := appendWire(appendWire(nil, a), w.keep([]byte("x")))
	if len(skip) != 2 {
		t.Fatalf("a, then a request kept two later: %q, want two pieces", skip)
	}
	if n := len(appendWire(appendWire(nil, a[:len(a)-1]), b)); n != 2 {
		t.Fatalf("a piece ending before b began joined it (%d pieces)", n)
	}
}

// rawPlan is a raw burst of perLane buyers on each of enough connections that every preparing
// goroutine takes whole connections.
func rawPlan(base string, perLane int) Plan {
	conns := 8 * runtime.GOMAXPROCS(0)
	return Plan{BaseURL: base, Targets: []Target{{SaleID: "s", ItemID: "i"}}, Buyers: conns * perLane, UserPrefix: "b",
		Secret: []byte("loadgen-test-secret-0123456789ab"), Clicks: 1, Conns: conns, Engine: EngineRaw,
		At: time.Now(), Timeout: time.Minute}
}

// TestPrepareLaysEachConnectionsRequestsBackToBack: a connection's requests are prepared one after
// the other, so the release writes each connection's share as one or two pieces (a slab may end
// inside it), not one a buyer.
func TestPrepareLaysEachConnectionsRequestsBackToBack(t *testing.T) {
	p, _ := rawPlan("http://127.0.0.1:1", 20).resolved()
	p.Profile = p.target()
	var err error
	if p.Minter, err = p.minter(); err != nil {
		t.Fatal(err)
	}
	clicks, _, err := p.prepare()
	if err != nil {
		t.Fatal(err)
	}
	lanes := p.rawLanes(len(clicks))
	for l := range lanes {
		var iov [][]byte
		var want []byte
		for i := l; i < len(clicks); i += lanes {
			iov = appendWire(iov, clicks[i].wire)
			want = append(want, clicks[i].wire...)
		}
		if len(iov) > 2 || !bytes.Equal(bytes.Join(iov, nil), want) {
			t.Fatalf("connection %d: its requests (%d bytes) in %d pieces, want at most 2", l, len(want), len(iov))
		}
	}
}

// TestRawBurstWritesJoinedPiecesWhole: a burst whose connections each carry far more than a
// socket takes at once is written in many partial writes that end inside joined pieces; every
// buyer's request still arrives whole, once, and its answer is matched to it.
func TestRawBurstWritesJoinedPiecesWhole(t *testing.T) {
	p := rawPlan("", 400)
	v, _ := auth.NewVerifier(p.Secret, nil)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		user, err := v.UserFromHeader(r.Header.Get("Authorization"))
		if err != nil || !strings.HasPrefix(r.Header.Get("Idempotency-Key"), user+"-") {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		time.Sleep(20 * time.Microsecond) // reads lag the writes: the sockets fill
		w.WriteHeader(http.StatusAccepted)
		_, _ = w.Write([]byte(`{"orderId":"` + user + `"}`))
	}))
	defer ts.Close()
	p.BaseURL = ts.URL
	res, err := Run(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, r := range res.Records {
		if r.Outcome != outcome.Reserved || r.OrderID != r.User || seen[r.User] {
			t.Fatalf("buyer %s: %s with order id %q (seen before: %t)", r.User, r.Outcome, r.OrderID, seen[r.User])
		}
		seen[r.User] = true
	}
	if len(seen) != p.Buyers {
		t.Fatalf("%d buyers answered, want %d", len(seen), p.Buyers)
	}
}
