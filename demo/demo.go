// Package demo runs the project's main job end to end on real services: it starts the checkout
// (API and order consumer) in-process, sets a sale up, fires a synchronized burst of buyers at it
// over HTTP, waits for the orders to reach PostgreSQL, checks that nothing was oversold, and
// reconciles Redis, PostgreSQL and Kafka order by order.
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
}

// Run executes the demo and writes progress to out.
func Run(ctx context.Context, cfg Config, out io.Writer, log *slog.Logger) (Report, error) {
	cfg.App.Server.Addr = "127.0.0.1:0"
	cfg.App.API, cfg.App.Consumer, cfg.App.Migrate = true, true, true
	app, err := server.Open(ctx, cfg.App, log)
	if err != nil {
		return Report{}, err
	}
	defer app.Close()
	sl := cfg.Sale
	sl.OpensAt = time.Now().Add(-time.Second)
	if cfg.Room != nil {
		sl.Room = *cfg.Room
		sl.Normalize()
	}
	item, ok := sl.Item(cfg.ItemID)
	if !ok {
		return Report{}, fmt.Errorf("sale %s has no item %q", sl.ID, cfg.ItemID)
	}
	if _, err := provision.Sale(ctx, app.Orders, app.Stock, sl, provision.Options{Reset: true}); err != nil {
		return Report{}, err
	}
	if err := app.Room.Reset(ctx, sl.ID); err != nil {
		return Report{}, fmt.Errorf("reset the waiting room: %w", err)
	}
	fmt.Fprintf(out, "sale %s reset: item %s has %d units; %d buyers ready\n", sl.ID, item.ID, item.Quantity, cfg.Buyers)

	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	addr, errc, err := app.Start(runCtx)
	if err != nil {
		return Report{}, err
	}
	plan := loadgen.Plan{BaseURL: "http://" + addr.String(), Targets: []loadgen.Target{{SaleID: sl.ID, ItemID: item.ID}},
		Buyers: cfg.Buyers, UserPrefix: "demo-buyer-", Secret: cfg.App.JWTSecret, Clicks: 1, Conns: cfg.Conns, At: time.Now()}
	if cfg.Room != nil {
		plan.Journey = &loadgen.Room{MaxPoll: 200 * time.Millisecond}
	}
	res, err := loadgen.Run(ctx, plan)
	if err != nil {
		return Report{}, err
	}
	if cfg.Room != nil {
		fmt.Fprintf(out, "waiting room: %g admissions/s, at most %d active, proof of work %d bits\n",
			sl.Room.AdmissionRate, sl.Room.MaxActive, sl.Room.PowDifficulty)
	}
	fmt.Fprintf(out, "burst: %d buyers answered in %s; %s\n", cfg.Buyers, answeredIn(res).Round(time.Millisecond), res.Resolved)
	rep := Report{Outcomes: map[outcome.Code]int{}, Quantity: item.Quantity}
	for _, r := range res.Records {
		rep.Outcomes[r.Outcome]++
	}
	reserved := int64(rep.Outcomes[outcome.Reserved])
	start := time.Now()
	if rep.Counts, err = WaitPersisted(ctx, app.Orders, sl.ID, item.ID, reserved, cfg.Settle); err != nil {
		return rep, err
	}
	rep.Settled = time.Since(start)
	snap, err := app.Stock.Snapshot(ctx, sl.ID, []sale.Item{item})
	if err != nil {
		return rep, err
	}
	rep.Stock, rep.Holds = snap[0].Stock, snap[0].Holds
	rep.Problems = Check(rep)
	rep.Reconcile, err = reconcile.Run(ctx, reconcile.Config{SaleID: sl.ID, RedisURL: cfg.App.RedisURL,
		PostgresURL: cfg.App.PostgresURL, Brokers: cfg.App.Brokers, OrdersTopic: cfg.App.OrdersTopic,
		DeadLetterTopic: cfg.App.DeadLetterTopic, ConsumerGroup: cfg.App.ConsumerGroup})
	if err != nil {
		return rep, fmt.Errorf("reconcile: %w", err)
	}
	for _, it := range rep.Reconcile.Items {
		for _, p := range it.Problems {
			rep.Problems = append(rep.Problems, "reconcile "+it.ItemID+": "+p)
		}
	}
	stop()
	if err := <-errc; err != nil {
		return rep, err
	}
	return rep, nil
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
