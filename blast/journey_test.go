package blast_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/fsctl/fsctl/blast"
	"github.com/fsctl/fsctl/internal/checkout/provision"
	"github.com/fsctl/fsctl/internal/contract/finding"
	"github.com/fsctl/fsctl/internal/contract/outcome"
	"github.com/fsctl/fsctl/internal/contract/sale"
	"github.com/fsctl/fsctl/internal/target/profile"
	"github.com/fsctl/fsctl/loadgen"
	"github.com/fsctl/fsctl/reconcile"
)

// roomSale provisions a second sale, with a waiting room, on the checkout c.
func roomSale(t *testing.T, c checkout, quantity int64) loadgen.Target {
	t.Helper()
	sl := testSale(t, quantity, 1)
	sl.ID += "-room"
	sl.Room = sale.Room{Enabled: true, AdmissionRate: 500, MaxActive: 100, FairStart: sale.FairStartFIFO, PowDifficulty: 6}
	sl.Normalize()
	if _, err := provision.Sale(context.Background(), c.app.Orders, c.app.Stock, sl, provision.Options{}); err != nil {
		t.Fatalf("provision: %v", err)
	}
	t.Cleanup(func() { _ = c.app.Stock.Reset(context.Background(), sl) })
	return loadgen.Target{SaleID: sl.ID, ItemID: "hot"}
}

func outcomes(recs []loadgen.Record) map[outcome.Code]int {
	n := map[outcome.Code]int{}
	for _, r := range recs {
		n[r.Outcome]++
	}
	return n
}

// TestRoomJourneySellsTheStock sends 300 buyers through a waiting room with proof of work for 30
// units: every buyer is admitted, exactly 30 reserve, and the invariants hold.
func TestRoomJourneySellsTheStock(t *testing.T) {
	c := startCheckout(t, 1, 1)
	target := roomSale(t, c, 30)
	ctx := context.Background()
	limits, err := blast.FetchLimits(ctx, http.DefaultClient, c.base, profile.Default(), []loadgen.Target{target})
	if err != nil {
		t.Fatal(err)
	}
	room := &loadgen.Room{MaxPoll: 100 * time.Millisecond}
	p := plan(c.base, []loadgen.Target{target}, 300)
	p.Journey = room
	res, err := loadgen.Run(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	n := outcomes(res.Records)
	if n[outcome.Reserved] != 30 || n[outcome.SoldOut] != 270 {
		t.Fatalf("outcomes %v, want 30 RESERVED and 270 SOLD_OUT", n)
	}
	if vs := blast.CheckResponses(res.Records, limits); !finding.OK(vs, false) {
		t.Fatalf("invariants: %+v", vs)
	}
	as := room.Admissions()
	if len(as) != 300 {
		t.Fatalf("%d admissions recorded, want 300", len(as))
	}
	for _, a := range as {
		if !a.Admitted || a.Waited <= 0 {
			t.Fatalf("admission %+v: every buyer should get in, after the release", a)
		}
	}
	for _, r := range res.Records {
		if r.URL != fmt.Sprintf("%s/api/v1/sales/%s/items/hot/purchase", c.base, target.SaleID) || r.Started.IsZero() {
			t.Fatalf("record %+v: want the purchase after the room", r)
		}
	}
}

// TestRoomJourneyWithoutARoom: a sale with no room answers the queue with an error, which is the
// buyer's outcome; nobody buys.
func TestRoomJourneyWithoutARoom(t *testing.T) {
	c := startCheckout(t, 5, 1)
	p := plan(c.base, []loadgen.Target{{SaleID: c.sale.ID, ItemID: "hot"}}, 10)
	room := &loadgen.Room{}
	p.Journey = room
	res, err := loadgen.Run(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	if n := outcomes(res.Records); n[outcome.Reserved] != 0 || len(res.Records) != 10 {
		t.Fatalf("outcomes %v: a buyer who never got a ticket bought", n)
	}
	for _, a := range room.Admissions() {
		if a.Admitted {
			t.Fatalf("admitted %+v without a room", a)
		}
	}
}

// settled waits until PostgreSQL and Redis agree on the sale (reconcile finds no problem) and
// the predicate holds, and returns the item's report.
func settled(t *testing.T, c checkout, ok func(reconcile.ItemReport) bool) reconcile.ItemReport {
	t.Helper()
	var last reconcile.ItemReport
	for range 200 {
		rs, err := reconcile.Sale(context.Background(), c.app.Stock, c.app.Orders, c.sale)
		if err != nil {
			t.Fatal(err)
		}
		if last = rs[0]; len(last.Problems) == 0 && ok(last) {
			return last
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("the sale did not settle: %+v", last)
	return last
}

// TestEveryReservedBuyerPays: with --pay 1, all 20 reservations are paid and PostgreSQL shows
// 20 PAID orders that reconcile with Redis.
func TestEveryReservedBuyerPays(t *testing.T) {
	c := startCheckout(t, 20, 1)
	p := plan(c.base, []loadgen.Target{{SaleID: c.sale.ID, ItemID: "hot"}}, 100)
	p.After = &loadgen.AfterPurchase{Pay: 1, Seed: 7}
	res, err := loadgen.Run(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	rows := blast.TallyFollowUps(res.FollowUps)
	if len(rows) != 1 || rows[0] != (blast.FollowUpRow{Action: loadgen.Pay, Answer: "PAID", Count: 20}) {
		t.Fatalf("follow-ups %+v, want 20 paid", rows)
	}
	r := settled(t, c, func(r reconcile.ItemReport) bool { return r.Counts.Paid == 20 })
	if r.Counts.Pending != 0 || r.Stock != 0 {
		t.Errorf("after paying: %+v", r)
	}
}

// TestEveryReservedBuyerCancels: with --cancel 1 every unit goes back on sale once. A unit
// cancelled while others are still buying can be reserved again, so there may be more than 20
// reservations, each cancelled.
func TestEveryReservedBuyerCancels(t *testing.T) {
	c := startCheckout(t, 20, 1)
	p := plan(c.base, []loadgen.Target{{SaleID: c.sale.ID, ItemID: "hot"}}, 100)
	p.After = &loadgen.AfterPurchase{Cancel: 1, Seed: 7}
	res, err := loadgen.Run(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	reserved := outcomes(res.Records)[outcome.Reserved]
	rows := blast.TallyFollowUps(res.FollowUps)
	if reserved < 20 || len(rows) != 1 || rows[0] != (blast.FollowUpRow{Action: loadgen.Cancel, Answer: "CANCELLED", Count: reserved}) {
		t.Fatalf("follow-ups %+v of %d reservations, want every one cancelled", rows, reserved)
	}
	r := settled(t, c, func(r reconcile.ItemReport) bool { return r.Counts.Cancelled == int64(reserved) })
	if r.Stock != 20 || r.Holds != 0 || r.Counts.Paid != 0 || r.Counts.Pending != 0 {
		t.Errorf("cancelled units did not all come back: %+v", r)
	}
}
