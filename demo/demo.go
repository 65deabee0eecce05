// Package demo runs the project's main job end to end on real services: it starts the checkout
// (API and order consumer) in-process, sets the sale up and releases a synchronized burst of
// buyers from the load generator, then runs the pipeline's tail every orchestration shares
// (package pipeline): the wait until the orders reach PostgreSQL, reconcile order by order, and
// the invariants.
package demo

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/fsctl/fsctl/internal/checkout/events"
	"github.com/fsctl/fsctl/internal/checkout/provision"
	"github.com/fsctl/fsctl/internal/contract/finding"
	"github.com/fsctl/fsctl/internal/contract/outcome"
	"github.com/fsctl/fsctl/internal/contract/sale"
	"github.com/fsctl/fsctl/internal/target/profile"
	"github.com/fsctl/fsctl/loadgen"
	"github.com/fsctl/fsctl/pipeline"
	"github.com/fsctl/fsctl/pipeline/steps"
	"github.com/fsctl/fsctl/server"
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
	// Steps are what the demo did, in order.
	Steps []steps.Step
	// Result is the pipeline's: the item before and after, the verdicts, the settle, reconcile
	// order by order, and the verdict.
	pipeline.Result
}

// Run executes the demo and writes progress to out: the checkout started in-process, then the
// sale set up and the burst, then the pipeline's tail (settle, reconcile, invariants), each
// step printed as it starts and ends.
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
	d.item = item
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	addr, errc, err := app.Start(runCtx)
	if err != nil {
		return Report{}, err
	}
	d.base = "http://" + addr.String()
	r := &steps.Runner{Print: func(line string) { fmt.Fprintln(out, line) }}
	err = r.Run(ctx, "sale", d.reset)
	if err == nil {
		defer d.pipe.Close()
		err = r.All(ctx, append([]steps.Named{{Name: "burst", Func: d.burst}}, d.pipe.Tail()...))
		d.rep.Result = d.pipe.Result
	}
	d.rep.Steps = r.Steps()
	if err != nil {
		return d.rep, err
	}
	stop()
	return d.rep, <-errc
}

// run is one demo while it runs.
type run struct {
	cfg  Config
	app  *server.App
	pipe *pipeline.Run
	sale sale.Sale
	item sale.Item
	base string
	rep  Report
}

// reset sets the sale up afresh (stock, orders, the waiting room) and reads it through the
// bundled server's profile.
func (d *run) reset(ctx context.Context) (string, bool, error) {
	if _, err := provision.Sale(ctx, d.app.Orders, d.app.Stock, d.sale, provision.Options{Reset: true}); err != nil {
		return "", false, err
	}
	if err := d.app.Room.Reset(ctx, d.sale.ID); err != nil {
		return "", false, fmt.Errorf("reset the waiting room: %w", err)
	}
	a := d.cfg.App
	p := *profile.Default()
	p.Kafka.Topic, p.Kafka.DeadLetter, p.Kafka.Group = events.LogNames(a.OrdersTopic, a.DeadLetterTopic, a.ConsumerGroup)
	var err error
	d.pipe, err = pipeline.Open(ctx, pipeline.Config{Profile: &p, Sale: d.sale.ID, Items: []string{d.item.ID},
		RedisURL: a.RedisURL, PostgresURL: a.PostgresURL, Kafka: a.Kafka, Settle: d.cfg.Settle})
	if err != nil {
		return "", false, err
	}
	return fmt.Sprintf("sale %s reset: %s; %d buyers ready", d.sale.ID, d.pipe.Ready(), d.cfg.Buyers), true, nil
}

// burst releases every buyer at once through the load generator (through the waiting room when
// the sale has one).
func (d *run) burst(ctx context.Context) (string, bool, error) {
	plan := loadgen.Plan{BaseURL: d.base, Targets: d.pipe.Targets, Buyers: d.cfg.Buyers, UserPrefix: "demo-buyer-",
		Secret: d.cfg.App.JWTSecret, Clicks: 1, Conns: d.cfg.Conns, At: time.Now()}
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
	sum := d.pipe.Answered(res, true)
	return fmt.Sprintf("%d buyers answered in %s; %s%s", d.cfg.Buyers, answeredIn(res).Round(time.Millisecond), res.Resolved, room),
		finding.OK(sum.Verdicts, false), nil
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
