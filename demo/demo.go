// Package demo runs the project's main job end to end on real services: it starts the checkout
// (API and order consumer) in-process, then runs the steps every orchestration shares — the sale
// set up, a synchronized burst of buyers from the load generator, the wait until the orders reach
// PostgreSQL, the state invariants (package verify) and reconcile order by order.
package demo

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/fsctl/fsctl/loadgen"
	"github.com/fsctl/fsctl/orders"
	"github.com/fsctl/fsctl/outcome"
	"github.com/fsctl/fsctl/provision"
	"github.com/fsctl/fsctl/reconcile"
	"github.com/fsctl/fsctl/sale"
	"github.com/fsctl/fsctl/server"
	"github.com/fsctl/fsctl/steps"
	"github.com/fsctl/fsctl/verify"
)

// Config describes a demo run.
type Config struct {
	App    server.AppConfig
	Sale   sale.Sale
	ItemID string
	Buyers int
	Conns  int
	// Settle bounds the wait for the consumer to record every reserved order.
	Settle time.Duration
	// Room, when set, puts this waiting room in front of the sale and sends every buyer through
	// it (proof of work, queue, admission token) before the purchase.
	Room *sale.Room
}

// Report is what the demo saw and checked.
type Report struct {
	// Outcomes counts the buyers by what they were told (one click each, no retries).
	Outcomes map[outcome.Code]int
	Quantity int64
	Stock    int64 // Redis counter after the burst
	Holds    int64 // live holds in Redis
	Counts   orders.ItemCounts
	Settled  time.Duration
	// Reconcile is fsctl reconcile's order-by-order comparison once the orders settled.
	Reconcile reconcile.Report
	Problems  []string // invariant violations; empty means the sale was sold correctly
	// Steps are what the demo did, in order.
	Steps []steps.Step
}

// Run executes the demo and writes progress to out: the checkout started in-process, then the
// steps sale, burst, settle, verify and reconcile, each printed as it starts and ends.
func Run(ctx context.Context, cfg Config, out io.Writer, log *slog.Logger) (Report, error) {
	cfg.App.Server.Addr = "127.0.0.1:0"
	cfg.App.API, cfg.App.Consumer, cfg.App.Migrate = true, true, true
	app, err := server.Open(ctx, cfg.App, log)
	if err != nil {
		return Report{}, err
	}
	defer app.Close()
	d := &run{cfg: cfg, app: app, sale: cfg.Sale, rep: Report{Outcomes: map[outcome.Code]int{}}}
	d.sale.OpensAt = time.Now().Add(-time.Second)
	if cfg.Room != nil {
		d.sale.Room = *cfg.Room
		d.sale.Normalize()
	}
	item, ok := d.sale.Item(cfg.ItemID)
	if !ok {
		return Report{}, fmt.Errorf("sale %s has no item %q", d.sale.ID, cfg.ItemID)
	}
	d.item, d.rep.Quantity = item, item.Quantity
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	addr, errc, err := app.Start(runCtx)
	if err != nil {
		return Report{}, err
	}
	d.base = "http://" + addr.String()
	r := &steps.Runner{Print: func(line string) { fmt.Fprintln(out, line) }}
	for _, s := range []struct {
		name string
		run  steps.Func
	}{{"sale", d.reset}, {"burst", d.burst}, {"settle", d.settle}, {"verify", d.verify}, {"reconcile", d.reconcile}} {
		if err := r.Run(ctx, s.name, s.run); err != nil {
			return d.rep, err
		}
	}
	d.rep.Steps = r.Steps()
	stop()
	return d.rep, <-errc
}

// run is one demo while it runs.
type run struct {
	cfg  Config
	app  *server.App
	sale sale.Sale
	item sale.Item
	base string
	rep  Report
}

// reset sets the sale up afresh: stock, orders, the waiting room.
func (d *run) reset(ctx context.Context) (string, bool, error) {
	if _, err := provision.Sale(ctx, d.app.Orders, d.app.Stock, d.sale, provision.Options{Reset: true}); err != nil {
		return "", false, err
	}
	if err := d.app.Room.Reset(ctx, d.sale.ID); err != nil {
		return "", false, fmt.Errorf("reset the waiting room: %w", err)
	}
	return fmt.Sprintf("sale %s reset: item %s has %d units; %d buyers ready", d.sale.ID, d.item.ID, d.item.Quantity, d.cfg.Buyers), true, nil
}

// burst releases every buyer at once through the load generator (through the waiting room when
// the sale has one).
func (d *run) burst(ctx context.Context) (string, bool, error) {
	plan := loadgen.Plan{BaseURL: d.base, Targets: []loadgen.Target{{SaleID: d.sale.ID, ItemID: d.item.ID}},
		Buyers: d.cfg.Buyers, UserPrefix: "demo-buyer-", Secret: d.cfg.App.JWTSecret, Clicks: 1, Conns: d.cfg.Conns, At: time.Now()}
	room := ""
	if d.cfg.Room != nil {
		plan.Journey = &loadgen.Room{MaxPoll: 200 * time.Millisecond}
		room = fmt.Sprintf("; waiting room: %g admissions/s, at most %d active, proof of work %d bits",
			d.sale.Room.AdmissionRate, d.sale.Room.MaxActive, d.sale.Room.PowDifficulty)
	}
	res, err := loadgen.Run(ctx, plan)
	if err != nil {
		return "", false, err
	}
	for _, r := range res.Records {
		d.rep.Outcomes[r.Outcome]++
	}
	return fmt.Sprintf("%d buyers answered in %s; %s%s", d.cfg.Buyers, answeredIn(res).Round(time.Millisecond), res.Resolved, room), true, nil
}

// settle waits until every reservation is a live order in PostgreSQL, then reads Redis.
func (d *run) settle(ctx context.Context) (string, bool, error) {
	reserved := int64(d.rep.Outcomes[outcome.Reserved])
	start := time.Now()
	var err error
	if d.rep.Counts, err = WaitPersisted(ctx, d.app.Orders, d.sale.ID, d.item.ID, reserved, d.cfg.Settle); err != nil {
		return "", false, err
	}
	d.rep.Settled = time.Since(start)
	snap, err := d.app.Stock.Snapshot(ctx, d.sale.ID, []sale.Item{d.item})
	if err != nil {
		return "", false, err
	}
	d.rep.Stock, d.rep.Holds = snap[0].Stock, snap[0].Holds
	live := d.rep.Counts.Pending + d.rep.Counts.Paid
	return fmt.Sprintf("%d of %d reservations are live orders in PostgreSQL after %s", live, reserved, d.rep.Settled.Round(time.Millisecond)),
		live >= reserved, nil
}

// verify checks the state invariants.
func (d *run) verify(context.Context) (string, bool, error) {
	d.rep.Problems = Check(d.rep)
	if len(d.rep.Problems) > 0 {
		return fmt.Sprintf("%d broken", len(d.rep.Problems)), false, nil
	}
	return "no oversell, every RESERVED is an order in PostgreSQL, no unit lost", true, nil
}

// reconcile runs fsctl reconcile over the sale, order by order.
func (d *run) reconcile(ctx context.Context) (string, bool, error) {
	a := d.cfg.App
	rep, err := reconcile.Run(ctx, reconcile.Config{SaleID: d.sale.ID, RedisURL: a.RedisURL, PostgresURL: a.PostgresURL,
		Brokers: a.Brokers, OrdersTopic: a.OrdersTopic, DeadLetterTopic: a.DeadLetterTopic, ConsumerGroup: a.ConsumerGroup})
	if err != nil {
		return "", false, err
	}
	d.rep.Reconcile = rep
	for _, it := range rep.Items {
		for _, p := range it.Problems {
			d.rep.Problems = append(d.rep.Problems, "reconcile "+it.ItemID+": "+p)
		}
	}
	if !rep.OK() {
		return "Redis, PostgreSQL and Kafka disagree", false, nil
	}
	return fmt.Sprintf("Redis, PostgreSQL and Kafka agree on %d item(s)", len(rep.Items)), true, nil
}

// answeredIn is how long the burst took from the barrier's release to its last answer.
func answeredIn(res *loadgen.Result) time.Duration {
	var last time.Time
	for _, r := range res.Records {
		if r.Done.After(last) {
			last = r.Done
		}
	}
	return max(0, last.Sub(res.Released))
}

// WaitPersisted polls PostgreSQL until the item's live orders reach want or timeout passes.
func WaitPersisted(ctx context.Context, db *orders.Store, saleID, itemID string, want int64, timeout time.Duration) (orders.ItemCounts, error) {
	var c orders.ItemCounts
	_, err := verify.Settle(ctx, timeout, 50*time.Millisecond, func(ctx context.Context) ([]string, error) {
		counts, err := db.Counts(ctx, saleID)
		if err != nil {
			return nil, err
		}
		c = orders.ItemCounts{}
		for _, x := range counts {
			if x.ItemID == itemID {
				c = x
			}
		}
		if live := c.Pending + c.Paid; live < want {
			return []string{fmt.Sprintf("%d of %d live orders", live, want)}, nil
		}
		return nil, nil
	})
	return c, err
}

// Check returns every invariant the run broke (package verify's rules), each naming its rule first.
func Check(r Report) []string {
	c := r.Counts
	return verify.Strings(verify.Check(verify.Item{ID: c.ItemID, Quantity: r.Quantity, Stock: r.Stock, Holds: verify.Of(r.Holds),
		Sold: verify.Of(c.Sold), Live: c.Pending + c.Paid, Paid: verify.Of(c.Paid),
		Reserved: verify.Of(int64(r.Outcomes[outcome.Reserved]))}), false)
}
