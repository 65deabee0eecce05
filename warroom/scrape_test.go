package warroom

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fsctl/fsctl/internal/harness/testenv"
)

func metricsServer(t *testing.T) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	body, err := os.ReadFile("testdata/metrics.txt")
	if err != nil {
		t.Fatal(err)
	}
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		_, _ = w.Write(body)
	}))
	t.Cleanup(srv.Close)
	return srv, &hits
}

func TestScraperSumsServersAndSkipsOtherSales(t *testing.T) {
	a, hits := metricsServer(t)
	b, _ := metricsServer(t)
	sc := NewScraper([]string{a.URL, b.URL + "/", "http://" + testenv.ClosedAddr(t)}, "/metrics", "bf", nil)
	ctx := context.Background()
	tr, err := sc.Traffic(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if tr.Outcomes["RESERVED"] != 80 || tr.Outcomes["SOLD_OUT"] != 320 || tr.Servers != 2 || tr.ServersTotal != 3 {
		t.Fatalf("traffic %+v", tr)
	}
	if tr.Latency.Count != 400 || tr.Latency.Counts[0] != 320 || quantile(tr.Latency, 0.99) != 0.01 {
		t.Fatalf("latency must sum the purchase route only over both servers: %+v", tr.Latency)
	}
	if _, err := json.Marshal(tr); err != nil {
		t.Fatalf("a scrape must be recordable: %v", err)
	}
	adm, _ := sc.Admission(ctx)
	if adm.QueueDepth != 70 || adm.Active != 12 || adm.Rate != 20 || adm.WaitSeconds != 3.5 || adm.AdmittedTotal != 600 {
		t.Fatalf("admission %+v", adm)
	}
	pay, _ := sc.Payment(ctx)
	if pay.Breaker != "half-open" || pay.Outcomes["PAID"] != 18 {
		t.Fatalf("payment %+v", pay)
	}
	if hits.Load() != 1 {
		t.Fatalf("one refresh scraped a server %d times; the three panels must share a scrape", hits.Load())
	}
}

func TestDownServerIsDownAndTheSnapshotCompletes(t *testing.T) {
	sc := NewScraper([]string{"http://" + testenv.ClosedAddr(t)}, "/metrics", "bf", nil)
	f := newFake()
	src := f.sources()
	src.Traffic, src.Admission, src.Payment = sc, sc, sc
	// A black hole: accepts and never answers, so only the probe timeout ends the scrape.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	hole := NewScraper([]string{"http://" + l.Addr().String()}, "/metrics", "bf", nil)
	src.Payment = hole
	s := Collect(context.Background(), src, CollectOptions{Timeout: 200 * time.Millisecond})
	if s.Traffic.State != Down || !strings.Contains(s.Traffic.Error, "connection refused") {
		t.Fatalf("closed port: %+v", s.Traffic.Status)
	}
	if s.Payment.State != Down || !strings.Contains(s.Payment.Error, "deadline") {
		t.Fatalf("silent server: %+v", s.Payment.Status)
	}
	if !s.Items.OK() || !s.Orders.OK() || !s.Pipeline.OK() {
		t.Fatalf("the other sources: %+v", s.Readings())
	}
}
