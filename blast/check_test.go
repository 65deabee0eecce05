package blast_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fsctl/fsctl/blast"
	"github.com/fsctl/fsctl/internal/contract/finding"
	"github.com/fsctl/fsctl/internal/contract/outcome"
	"github.com/fsctl/fsctl/loadgen"
)

var hot = loadgen.Target{SaleID: "s", ItemID: "hot"}

// fakeCheckout answers purchases with answer(key, try of that key).
func fakeCheckout(t *testing.T, answer func(w http.ResponseWriter, key string, try int)) string {
	t.Helper()
	var mu sync.Mutex
	tries := map[string]int{}
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/healthz" {
			return
		}
		key := r.Header.Get("Idempotency-Key")
		mu.Lock()
		tries[key]++
		n := tries[key]
		mu.Unlock()
		answer(w, key, n)
	}))
	t.Cleanup(hs.Close)
	return hs.URL
}

func runFake(t *testing.T, base string, mod func(*loadgen.Plan)) *loadgen.Result {
	t.Helper()
	p := plan(base, []loadgen.Target{hot}, 20)
	p.Conns, p.At = 4, time.Now().Add(50*time.Millisecond)
	mod(&p)
	res, err := loadgen.Run(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func TestSameKeySameAnswerCatchesAFlakyServer(t *testing.T) {
	// Every answer carries a fresh order id, so a replayed key gets a different reservation.
	flaky := fakeCheckout(t, func(w http.ResponseWriter, key string, try int) {
		w.WriteHeader(http.StatusAccepted)
		fmt.Fprintf(w, `{"orderId":"%s-%d"}`, key, try)
	})
	res := runFake(t, flaky, func(p *loadgen.Plan) { p.Replays = 1 })
	if len(res.Records) != 40 {
		t.Fatalf("%d records, want 20 buyers x 2 tries", len(res.Records))
	}
	vs := blast.CheckResponses(res.Records, map[loadgen.Target]loadgen.ItemLimit{hot: {Stock: 100, PerUser: 1}})
	if vs[2].Passed() || !strings.Contains(vs[2].Problems[0], "try 1 got RESERVED") {
		t.Errorf("same-key verdict %+v", vs[2])
	}
	if !vs[0].Passed() || vs[1].Passed() {
		t.Errorf("stock verdict %+v, per-user verdict %+v: each buyer got two different orders", vs[0], vs[1])
	}

	// A server that fails the first try and remembers the key afterwards is fine.
	steady := fakeCheckout(t, func(w http.ResponseWriter, key string, try int) {
		if try == 1 {
			w.WriteHeader(http.StatusInternalServerError)
			return
		}
		w.WriteHeader(http.StatusAccepted)
		fmt.Fprintf(w, `{"orderId":"%s"}`, key)
	})
	res = runFake(t, steady, func(p *loadgen.Plan) { p.Retries, p.Replays = 2, 1 })
	counts := map[outcome.Code]int{}
	for _, r := range res.Records {
		counts[r.Outcome]++
	}
	if counts[loadgen.ServerError] != 20 || counts[outcome.Reserved] != 40 {
		t.Errorf("outcomes %v, want one 5xx, one retry and one replay per buyer", counts)
	}
	if vs := blast.CheckResponses(res.Records, map[loadgen.Target]loadgen.ItemLimit{hot: {Stock: 20, PerUser: 1}}); !finding.OK(vs, false) {
		t.Errorf("a consistent server failed: %+v", vs)
	}
}

func TestGarbageIsClassifiedNotFatal(t *testing.T) {
	garbage := fakeCheckout(t, func(w http.ResponseWriter, _ string, _ int) {
		w.Write([]byte("\x00\xffnot json at all"))
	})
	res := runFake(t, garbage, func(*loadgen.Plan) {})
	slow := fakeCheckout(t, func(w http.ResponseWriter, _ string, _ int) { time.Sleep(300 * time.Millisecond) })
	// On net/http every late answer is its own TIMEOUT; the raw engine drops the connection
	// behind one (TestRawEngineTimesOut), so this case pins http rather than auto's raw.
	timeouts := runFake(t, slow, func(p *loadgen.Plan) { p.Timeout, p.Engine = 50*time.Millisecond, loadgen.EngineHTTP })
	rude := fakeCheckout(t, func(w http.ResponseWriter, _ string, _ int) { panic(http.ErrAbortHandler) })
	hangups := runFake(t, rude, func(*loadgen.Plan) {})
	for _, tc := range []struct {
		res  *loadgen.Result
		want outcome.Code
	}{{res, loadgen.ServerError}, {timeouts, loadgen.Timeout}, {hangups, loadgen.TransportError}} {
		for _, r := range tc.res.Records {
			if r.Outcome != tc.want {
				t.Fatalf("got %s (%s), want %s", r.Outcome, r.Error, tc.want)
			}
		}
	}
}

func TestUnreachableTargetIsRefusedBeforeTheStart(t *testing.T) {
	const base = "http://127.0.0.1:1" // nothing listens on port 1; a closed test server's port may be reused
	p := plan(base, []loadgen.Target{hot}, 10)
	if _, err := loadgen.Run(context.Background(), p); err == nil || !strings.Contains(err.Error(), "unreachable") {
		t.Errorf("got %v", err)
	}
	if err := blast.Probe(context.Background(), http.DefaultClient, base, "/"); err == nil {
		t.Error("probe of a closed server passed")
	}
}

func TestResponseInvariants(t *testing.T) {
	rec := func(user, key string, o outcome.Code, id string, attempt int) loadgen.Record {
		return loadgen.Record{User: user, Key: key, Target: hot, Outcome: o, OrderID: id, Attempt: attempt}
	}
	recs := []loadgen.Record{
		rec("a", "a1", outcome.Reserved, "o1", 1),
		rec("a", "a1", outcome.Reserved, "o1", 2), // a replay: counts once
		rec("a", "a2", outcome.Reserved, "o2", 1), // a second order for a: over the limit of 1
		rec("b", "b1", loadgen.Timeout, "", 1),
		rec("b", "b1", outcome.Reserved, "o3", 2), // a retry after a timeout: fine
		rec("c", "c1", outcome.SoldOut, "", 1),
	}
	vs := blast.CheckResponses(recs, map[loadgen.Target]loadgen.ItemLimit{hot: {Stock: 2, PerUser: 1}})
	if vs[0].Passed() || vs[0].Problems[0] != "s:hot: 3 reservations for 2 units" {
		t.Errorf("stock: %+v", vs[0])
	}
	if vs[1].Passed() || vs[1].Problems[0] != "s:hot: a reserved 2, limit 1" {
		t.Errorf("per-user: %+v", vs[1])
	}
	if !vs[2].Passed() {
		t.Errorf("same key: %+v", vs[2])
	}
	if vs := blast.CheckResponses(recs, map[loadgen.Target]loadgen.ItemLimit{hot: {Stock: 3, PerUser: 2}}); !finding.OK(vs, false) {
		t.Errorf("within the limits: %+v", vs)
	}
}

// TestPerSaleLimitFromResponses: with a per-sale limit the answers are also counted per buyer
// across the sale's items; a sale without one gets no such verdict.
func TestPerSaleLimitFromResponses(t *testing.T) {
	cold := loadgen.Target{SaleID: hot.SaleID, ItemID: "cold"}
	other := loadgen.Target{SaleID: "other", ItemID: "hot"}
	rec := func(user string, tg loadgen.Target, id string) loadgen.Record {
		return loadgen.Record{User: user, Key: id, Target: tg, Outcome: outcome.Reserved, OrderID: id, Attempt: 1}
	}
	recs := []loadgen.Record{
		rec("a", hot, "o1"), rec("a", cold, "o2"), // two items of one sale: over a per-sale limit of 1
		rec("b", hot, "o3"), rec("b", other, "o4"), // one in each sale: fine
	}
	limits := map[loadgen.Target]loadgen.ItemLimit{hot: {Stock: 9, PerUser: 1, PerSale: 1}, cold: {Stock: 9, PerUser: 1, PerSale: 1},
		other: {Stock: 9, PerUser: 1}}
	vs := blast.CheckResponses(recs, limits)
	if len(vs) != 4 || vs[2].Check != "per-sale limit (responses)" || vs[2].Passed() ||
		len(vs[2].Problems) != 1 || vs[2].Problems[0] != "sale s: a reserved 2 across its items, limit 1" {
		t.Fatalf("per-sale verdict: %+v", vs)
	}
	limits[hot], limits[cold] = loadgen.ItemLimit{Stock: 9, PerUser: 1, PerSale: 2}, loadgen.ItemLimit{Stock: 9, PerUser: 1, PerSale: 2}
	if vs := blast.CheckResponses(recs, limits); !finding.OK(vs, false) || len(vs) != 4 {
		t.Fatalf("within a per-sale limit of 2: %+v", vs)
	}
	delete(limits, hot)
	delete(limits, cold)
	if vs := blast.CheckResponses(recs, limits); len(vs) != 3 {
		t.Fatalf("no sale with a per-sale limit: %d verdicts, want 3", len(vs))
	}
}
