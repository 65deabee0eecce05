package gameday

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/fsctl/fsctl/internal/checkout/orders"
	"github.com/fsctl/fsctl/internal/checkout/provision"
	"github.com/fsctl/fsctl/internal/checkout/room"
	"github.com/fsctl/fsctl/internal/checkout/stock"
	"github.com/fsctl/fsctl/internal/contract/finding"
	"github.com/fsctl/fsctl/internal/contract/outcome"
	"github.com/fsctl/fsctl/internal/contract/sale"
	"github.com/fsctl/fsctl/internal/harness/stack"
	"github.com/fsctl/fsctl/internal/platform/kafkaconn"
	"github.com/fsctl/fsctl/internal/platform/redisconn"
	"github.com/fsctl/fsctl/loadgen"
	"github.com/fsctl/fsctl/pipeline"
	"github.com/fsctl/fsctl/reconcile"
)

// saleOf is the scenario's sale definition, open from a second ago.
func (r *run) saleOf() sale.Sale {
	sp := r.cfg.Scenario.Sale
	sl := sale.Sale{ID: sp.ID, Name: "game day " + r.cfg.Scenario.Name, OpensAt: r.cfg.Now().Add(-time.Second).UTC().Truncate(time.Second),
		PerUserLimit: sp.PerUserLimit, HoldTTL: sp.HoldTTL}
	for _, it := range sp.Items {
		sl.Items = append(sl.Items, sale.Item{ID: it.ID, Name: it.ID, Quantity: it.Quantity, PriceCents: 1000, Shards: it.Shards})
	}
	if r := sp.Room; r != nil {
		sl.Room = sale.Room{Enabled: true, AdmissionRate: r.AdmissionRate, MaxActive: r.MaxActive, PowDifficulty: r.PowDifficulty}
	}
	sl.Normalize()
	return sl
}

// createSale migrates the schema and creates the sale afresh (game days are rehearsals).
func (r *run) createSale(ctx context.Context) (string, error) {
	e := r.env.Endpoints
	if _, err := orders.Migrate(ctx, e.PostgresURL); err != nil {
		return "", err
	}
	db, err := orders.Open(ctx, e.PostgresURL)
	if err != nil {
		return "", err
	}
	rdb, err := redisconn.Open(e.RedisURL, redisconn.Tune{})
	if err != nil {
		db.Close()
		return "", err
	}
	r.db, r.st = db, stock.New(rdb)
	r.closeStores = func() { db.Close(); rdb.Close() }
	r.sale = r.saleOf()
	if err := r.sale.Validate(); err != nil {
		return "", err
	}
	if _, err := provision.Sale(ctx, db, r.st, r.sale, provision.Options{Reset: true}); err != nil {
		return "", err
	}
	if err := room.New(rdb).Reset(ctx, r.sale.ID); err != nil {
		return "", err
	}
	// Every reservation must end before the sale counts as settled: the buyers pay and cancel,
	// and the holds expire.
	r.pipe, err = pipeline.Open(ctx, pipeline.Config{Sale: r.sale.ID, RedisURL: e.RedisURL, PostgresURL: e.PostgresURL,
		Kafka: kafkaconn.EnvFor(e.KafkaBrokers), Settle: r.cfg.Scenario.Settle, Ended: true, Checks: r.checks, Note: r.note, Now: r.cfg.Now})
	if err != nil {
		return "", err
	}
	r.closeStores = func() { r.pipe.Close(); db.Close(); rdb.Close() }
	return fmt.Sprintf("sale %s reset: %d item(s), %d units, hold %s, %d per user", r.sale.ID, len(r.sale.Items), r.cfg.Scenario.Units(), r.sale.HoldTTL, r.sale.PerUserLimit), nil
}

// reservedOrders are the distinct orders buyers were told RESERVED for.
func (r *run) reservedOrders() []uuid.UUID {
	seen := map[uuid.UUID]bool{}
	var out []uuid.UUID
	for _, rec := range r.records {
		if rec.Outcome != outcome.Reserved {
			continue
		}
		id, err := uuid.Parse(rec.OrderID)
		if err != nil || seen[id] {
			continue
		}
		seen[id] = true
		out = append(out, id)
	}
	return out
}

// settle, reconcile and invariants are the pipeline's tail, as game day phases: a step that ran
// and did not pass fails its phase.
// settle heals first what a fault left down (a restart that failed), so the sale can settle and
// the checker sees every order the log holds, then waits for the sale to settle.
func (r *run) settle(ctx context.Context) (string, error) {
	if r.cfg.Target != nil {
		return passed(r.pipe.Settle(ctx)) // nothing of the target's is fsctl's to heal
	}
	down, err := r.stackDown(ctx)
	if err != nil {
		return "", err
	}
	if len(down) > 0 {
		r.note("healing: %s not running after the faults; starting it again", strings.Join(down, ", "))
		if err := stack.Up(ctx, r.stack); err != nil {
			return "", fmt.Errorf("heal %s: %w", strings.Join(down, ", "), err)
		}
	}
	return passed(r.pipe.Settle(ctx))
}

// reconcile runs `fsctl reconcile` on the settled sale: Redis, PostgreSQL and Kafka order by order.
func (r *run) reconcile(ctx context.Context) (string, error) {
	detail, ok, err := r.pipe.Reconcile(ctx)
	if rep := r.pipe.Result.Reconcile; rep != nil {
		r.rep.Reconcile = rep.Items
		var b strings.Builder
		_ = rep.Render(&b)
		r.rep.ReconcileText = b.String()
	}
	return passed(detail, ok, err)
}

func (r *run) invariants(ctx context.Context) (string, error) {
	detail, ok, err := r.pipe.Invariants(ctx)
	r.rep.Invariants = r.pipe.Verdicts
	return passed(detail, ok, err)
}

// passed is a pipeline step's answer as a phase's: one that did not pass is an error.
func passed(detail string, ok bool, err error) (string, error) {
	if err == nil && !ok {
		err = errors.New(detail)
	}
	return detail, err
}

// rebuildRetry is how soon a failed rebuild is tried again: a rebuild that waits for PostgreSQL
// (stopped by another fault) starts within this of its return, so the sale's outage is not
// stretched by up to a whole second of waiting (chaos seed 2001 on the cluster: 5.5 s).
const rebuildRetry = 250 * time.Millisecond

// rebuild restores the sale's Redis state from PostgreSQL after Redis lost it. Another fault may
// hold PostgreSQL or Kafka down meanwhile (a chaos run draws them to meet): the rebuild is tried
// again every rebuildRetry for up to two minutes, as an operator's automation would; a failure
// is noted when its reason differs from the try before.
// recorded says the order log was recorded after the loss (rebuildLost).
func (r *run) rebuild(ctx context.Context, recorded bool) (string, error) {
	deadline := r.cfg.Now().Add(2 * time.Minute)
	var last string
	for try := 1; ; try++ {
		note, err := r.rebuildOnce(ctx, recorded)
		if err == nil || ctx.Err() != nil || r.cfg.Now().After(deadline) {
			if err == nil && try > 1 {
				note = fmt.Sprintf("%s (try %d)", note, try)
			}
			return note, err
		}
		if err.Error() != last {
			r.note("redis rebuild failed (try %d), trying again every %s: %v", try, rebuildRetry, err)
			last = err.Error()
		}
		if err := sleep(ctx, rebuildRetry); err != nil {
			return "", err
		}
	}
}

// retryUntil calls try until it succeeds, ctx ends or stop is closed, waiting every between
// tries; a try under way when stop closes is finished. It returns the last try's error.
func retryUntil(ctx context.Context, stop <-chan struct{}, every time.Duration, try func() error) error {
	for {
		err := try()
		if err == nil || ctx.Err() != nil {
			return err
		}
		select {
		case <-stop:
			return err
		case <-ctx.Done():
			return err
		case <-time.After(every):
		}
	}
}

// rebuildLost brings back a Redis that lost the sale (restart starts the killed Redis again,
// empty) while the order log is recorded in PostgreSQL (reconcile.RecordLog), then rebuilds it
// without reading the log again: a Kafka broker lost just then does not hold the sale down as
// well. The recording is tried again until Redis is back (PostgreSQL may be stopped by another
// fault, and back before Redis: chaos seed 2016 read the log after a broker froze, a 7.3 s
// outage). When the log could not be recorded by then, the rebuild records it itself. A
// restart's error is returned as it is.
func (r *run) rebuildLost(ctx context.Context, restart func(context.Context) error) (string, error) {
	lctx, cancel := context.WithCancel(ctx)
	defer cancel()
	logged, restarted := make(chan error, 1), make(chan struct{})
	go func() {
		logged <- retryUntil(lctx, restarted, rebuildRetry, func() error {
			_, err := reconcile.RecordLog(lctx, r.reconcileConfig(false))
			return err
		})
	}()
	err := restart(ctx)
	close(restarted)
	if err != nil {
		return "", err
	}
	err = <-logged
	if err != nil {
		r.note("order log not recorded while redis came back, the rebuild records it: %v", err)
	}
	note, err := r.rebuild(ctx, err == nil)
	if err != nil {
		return "", fmt.Errorf("rebuild redis from postgres: %w", err)
	}
	return note, nil
}

func (r *run) rebuildOnce(ctx context.Context, recorded bool) (string, error) {
	rep, err := reconcile.Run(ctx, r.reconcileConfig(recorded))
	if err != nil {
		return "", err
	}
	var what []string
	for _, a := range rep.Actions {
		if a.Error != "" {
			return "", fmt.Errorf("%s %s: %s", a.ItemID, a.What, a.Error)
		}
		what = append(what, strings.TrimSpace(a.ItemID+" "+a.What))
	}
	return fmt.Sprintf("%d action(s): %s", len(rep.Actions), strings.Join(what, "; ")), nil
}

// reconcileConfig is the rebuild's reconcile of the game day's sale.
func (r *run) reconcileConfig(recorded bool) reconcile.Config {
	e := r.env.Endpoints
	return reconcile.Config{
		SaleID: r.sale.ID, RedisURL: e.RedisURL, PostgresURL: e.PostgresURL, Kafka: kafkaconn.EnvFor(e.KafkaBrokers),
		RebuildRedis: true, LogRecorded: recorded, DrainTimeout: time.Minute, Timeout: 5 * time.Second,
	}
}

// checks are the game day's own invariants, judged with the pipeline's: every RESERVED answer
// ended in PostgreSQL, and a buyer told PAID or CANCELLED finds that there.
func (r *run) checks(ctx context.Context) ([]finding.Finding, error) {
	ids := r.reservedOrders()
	statuses, err := r.db.Statuses(ctx, ids)
	if err != nil {
		return nil, err
	}
	endings, missing := checkEndings(ids, statuses)
	r.rep.Acknowledged, r.rep.Missing = len(ids), missing
	return []finding.Finding{endings, checkFollowUps(r.followUps, statuses),
		checkNoInternal(r.records, r.followUps), checkAvailability(r.rep.Availability, r.cfg.Scenario.Budget)}, nil
}

// checkNoInternal: no answer was a 500. A fault is a store or a process going away, which the
// server answers 503 with a Retry-After (or a definitive answer); a 500 is a bug it did not expect.
func checkNoInternal(recs []loadgen.Record, fs []loadgen.FollowUp) finding.Finding {
	var p []string
	for _, r := range recs {
		if r.Status == http.StatusInternalServerError {
			p = append(p, fmt.Sprintf("buyer %d: %s %s answered 500 %s", r.Buyer, r.Method, r.URL, r.Outcome))
		}
	}
	for _, f := range fs {
		if f.Answer == string(outcome.Internal) {
			p = append(p, fmt.Sprintf("buyer %d: %s of order %s answered 500 INTERNAL", f.Buyer, f.Action, f.OrderID))
		}
	}
	return check("no internal errors (500)", len(p) == 0, detail(p, fmt.Sprintf("%d requests and %d follow-ups answered without a 500", len(recs), len(fs))))
}

// checkEndings: every RESERVED answer ends in PostgreSQL as paid, expired, cancelled or failed;
// missing is how many PostgreSQL does not have at all.
func checkEndings(ids []uuid.UUID, statuses map[uuid.UUID]string) (f finding.Finding, missing int) {
	by := map[string]int{}
	var p []string
	for _, id := range ids {
		st, ok := statuses[id]
		switch {
		case !ok:
			p = append(p, id.String()+": not in PostgreSQL")
		case st == orders.StatusPending:
			p = append(p, id.String()+": still PENDING")
		}
		by[st]++
	}
	var sum []string
	for _, st := range []string{"PAID", "EXPIRED", "CANCELLED", "FAILED"} {
		sum = append(sum, fmt.Sprintf("%s %d", st, by[st]))
	}
	return check("every reserved answer ended in PostgreSQL", len(p) == 0, detail(p, fmt.Sprintf("%d reserved: %s", len(ids), strings.Join(sum, ", ")))), by[""]
}

// checkFollowUps: a buyer told PAID or CANCELLED finds that in PostgreSQL.
func checkFollowUps(fs []loadgen.FollowUp, statuses map[uuid.UUID]string) finding.Finding {
	var p []string
	n := 0
	for _, f := range fs {
		if f.Answer != "PAID" && f.Answer != "CANCELLED" {
			continue
		}
		n++
		id, err := uuid.Parse(f.OrderID)
		if err != nil {
			continue
		}
		if got := statuses[id]; got != f.Answer {
			p = append(p, fmt.Sprintf("buyer %d told %s, PostgreSQL has %q for %s", f.Buyer, f.Answer, got, f.OrderID))
		}
	}
	return check("paid and cancelled answers match PostgreSQL", len(p) == 0, detail(p, fmt.Sprintf("%d answers checked", n)))
}

func detail(problems []string, ok string) string {
	if len(problems) == 0 {
		return ok
	}
	if len(problems) > 5 {
		return strings.Join(problems[:5], "; ") + fmt.Sprintf("; and %d more", len(problems)-5)
	}
	return strings.Join(problems, "; ")
}

// check is one invariant after recovery: the detail says what broke it, or sums it up.
func check(name string, ok bool, detail string) finding.Finding {
	f := finding.Finding{Check: name, Status: finding.Pass, Detail: detail}
	if !ok {
		f.Status = finding.Fail
	}
	return f
}
