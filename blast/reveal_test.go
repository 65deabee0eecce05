package blast_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fsctl/fsctl/blast"
	"github.com/fsctl/fsctl/internal/checkout/provision"
	"github.com/fsctl/fsctl/internal/contract/outcome"
	"github.com/fsctl/fsctl/internal/contract/sale"
	"github.com/fsctl/fsctl/internal/harness/stack"
	"github.com/fsctl/fsctl/internal/target/profile"
	"github.com/fsctl/fsctl/loadgen"
	checkouttest "github.com/fsctl/fsctl/server/servertest"
)

func countsOf(sum blast.Summary) map[outcome.Code]int {
	n := map[outcome.Code]int{}
	for _, r := range sum.Outcomes {
		n[r.Outcome] = r.Count
	}
	return n
}

// TestRevealBurst fires at a sale that reveals its purchase path at the opening. Prepared before
// the opening and released at it, 50 buyers on --reveal auto (the default) each fetch their own
// path and buy through it: exactly the 10 units sell, once each, and the state check agrees.
// Before that, --reveal off buys nothing (every purchase refused 403) and --engine raw is refused
// with the flag that fixes it.
func TestRevealBurst(t *testing.T) {
	sl := sale.Sale{OpensAt: time.Now().Add(4 * time.Second), PerUserLimit: 1, HoldTTL: 10 * time.Minute,
		Reveal: sale.Reveal{Enabled: true}, Items: []sale.Item{{ID: "hot", Quantity: 10, PriceCents: 4999}}}
	c := checkouttest.Start(t, checkouttest.Options{Sale: &sl})
	target := loadgen.Target{SaleID: c.Sale.ID, ItemID: "hot"}
	burst := func(buyers int, prefix string, at time.Time) blast.Burst {
		p := plan(c.Base, []loadgen.Target{target}, buyers)
		p.Profile, p.UserPrefix, p.At = profile.Default(), prefix, at
		return blast.Burst{Plan: p, RedisURL: stack.EndpointsFromEnv().RedisURL, PostgresURL: c.PostgresURL,
			Settle: 30 * time.Second, Thresholds: blast.Thresholds{ExpectSold: -1}}
	}
	ctx := context.Background()

	// --reveal off, before the opening: the plain route refuses the reveal sale outright.
	off := burst(20, "off-", time.Now().Add(300*time.Millisecond))
	off.Reveal = blast.RevealOff
	rep, err := blast.Fire(ctx, off, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	if n := countsOf(rep.Summary); n[loadgen.ClientError] != 20 || rep.Summary.Sold != 0 {
		t.Fatalf("--reveal off: outcomes %v, sold %d; want 20 CLIENT_ERROR (403) and nothing sold", n, rep.Summary.Sold)
	}

	// --engine raw cannot follow the reveal: refused before anything is sent.
	raw := burst(20, "raw-", time.Now().Add(300*time.Millisecond))
	raw.Plan.Engine = loadgen.EngineRaw
	if _, err := blast.Fire(ctx, raw, &bytes.Buffer{}); err == nil || !strings.Contains(err.Error(), "--engine http") || !strings.Contains(err.Error(), "reveal") {
		t.Fatalf("--engine raw at a reveal sale: %v, want a refusal naming --engine http", err)
	}

	at := c.Sale.OpensAt
	if time.Until(at) < 500*time.Millisecond {
		t.Logf("the checkout took long to start: releasing after the opening (%s late)", -time.Until(at))
		at = time.Now().Add(500 * time.Millisecond)
	}
	b := burst(50, "buyer-", at)
	b.CheckState, b.Thresholds.ExpectSold = true, 10
	b.Records = filepath.Join(t.TempDir(), "records.jsonl")
	var progress bytes.Buffer
	rep, err = blast.Fire(ctx, b, &progress)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	_ = rep.Summary.Render(&out)
	if rep.Broken() || rep.Missed() {
		t.Fatalf("the burst failed its checks:\n%s\n%s", progress.String(), out.String())
	}
	if n := countsOf(rep.Summary); n[outcome.Reserved] != 10 || n[outcome.SoldOut] != 40 || rep.Summary.Sold != 10 {
		t.Fatalf("outcomes %v, sold %d; want 10 RESERVED, 40 SOLD_OUT:\n%s", n, rep.Summary.Sold, out.String())
	}
	if !strings.Contains(progress.String(), "reveal: sale "+c.Sale.ID) || rep.Summary.Engine != loadgen.EngineHTTP ||
		!strings.Contains(rep.Summary.EngineFallback, "reveals its purchase path") {
		t.Fatalf("auto did not follow the reveal on the http engine (engine %s, fallback %q):\n%s", rep.Summary.Engine, rep.Summary.EngineFallback, progress.String())
	}
	var journey bytes.Buffer
	if err := rep.RenderJourney(&journey); err != nil || !strings.HasPrefix(journey.String(), "reveal: 50 purchase paths fetched, 0 asks refused") {
		t.Fatalf("journey report %q (%v): want every buyer's path fetched", journey.String(), err)
	}
	f, err := os.Open(b.Records)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	file, err := loadgen.ReadRecords(f)
	if err != nil {
		t.Fatal(err)
	}
	plain := c.Base + "/api/v1/sales/" + c.Sale.ID + "/items/hot/purchase/"
	orders := map[string]bool{}
	for _, r := range file.Records {
		if !strings.HasPrefix(r.URL, plain) || len(r.URL) != len(plain)+32 || r.Status == 403 {
			t.Fatalf("record %+v: want a purchase through the buyer's revealed path", r)
		}
		if r.Outcome == outcome.Reserved {
			orders[r.OrderID] = true
		}
	}
	if len(orders) != 10 {
		t.Fatalf("%d distinct orders, want 10", len(orders))
	}
}

// TestRevealThroughTheRoom: a sale with a waiting room and reveal on. Each buyer is admitted,
// then asks for its path and buys through it with the admission token.
func TestRevealThroughTheRoom(t *testing.T) {
	c := startCheckout(t, 1, 1)
	sl := testSale(t, 10, 1)
	sl.ID += "-room-reveal"
	sl.Room = sale.Room{Enabled: true, AdmissionRate: 500, MaxActive: 100, FairStart: sale.FairStartFIFO}
	sl.Reveal = sale.Reveal{Enabled: true}
	sl.Normalize()
	if _, err := provision.Sale(context.Background(), c.app.Orders, c.app.Stock, sl, provision.Options{}); err != nil {
		t.Fatalf("provision: %v", err)
	}
	t.Cleanup(func() { _ = c.app.Stock.Reset(context.Background(), sl) })
	target := loadgen.Target{SaleID: sl.ID, ItemID: "hot"}
	p := plan(c.base, []loadgen.Target{target}, 30)
	p.Journey = &loadgen.Room{MaxPoll: 100 * time.Millisecond}
	p = blast.WithReveal(p)
	room, ok := p.Journey.(*loadgen.Room)
	if !ok || room.Reveal == nil {
		t.Fatalf("journey %#v: want the room with reveal", p.Journey)
	}
	res, err := loadgen.Run(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	if n := outcomes(res.Records); n[outcome.Reserved] != 10 || n[outcome.SoldOut] != 20 {
		t.Fatalf("outcomes %v, want 10 RESERVED and 20 SOLD_OUT", n)
	}
	if got := room.Reveal.Counts(); got.Fetched != 30 || got.Failed != 0 || len(room.Admissions()) != 30 {
		t.Fatalf("reveal %+v, %d admissions: want 30 paths after 30 admissions", got, len(room.Admissions()))
	}
}
