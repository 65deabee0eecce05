package pipeline

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/fsctl/fsctl/blast"
	"github.com/fsctl/fsctl/internal/contract/finding"
	"github.com/fsctl/fsctl/internal/platform/kafkaconn"
	"github.com/fsctl/fsctl/internal/proof/verify"
	"github.com/fsctl/fsctl/reconcile"
)

// Settle waits, up to the Settle bound, until the consumer has nothing left to write and every
// item is settled (see Config.Ended), then checks the stores against the answers.
func (r *Run) Settle(ctx context.Context) (string, bool, error) {
	deadline := r.cfg.Now().Add(r.cfg.Settle)
	p := r.cfg.Profile
	var client *kafka.Client
	if len(r.cfg.Kafka.Brokers) > 0 && p.Kafka.Topic != "" && p.Kafka.Group != "" {
		c, closeIdle, err := kafkaconn.NewClient(r.cfg.Kafka, 5*time.Second)
		if err != nil {
			return "", false, err
		}
		defer closeIdle()
		client = c
	}
	start := r.cfg.Now()
	last, noted := "", time.Time{}
	waiting, err := verify.Settle(ctx, r.cfg.Settle, 0, func(ctx context.Context) ([]string, error) {
		w, err := r.unsettled(ctx, client)
		// What it waits for, when that changed, at most every noteEvery: a lag that grows by
		// the message would otherwise fill the timeline.
		if now := strings.Join(w, "; "); err == nil && now != last && now != "" && r.cfg.Now().Sub(noted) >= noteEvery {
			r.cfg.Note("settling: %s", now)
			last, noted = now, r.cfg.Now()
		}
		return w, err
	})
	if err != nil {
		return "", false, err
	}
	r.Settled = len(waiting) == 0
	settledIn := r.cfg.Now().Sub(start)
	state, err := blast.CheckState(ctx, r.Target, r.cfg.Sale, r.records, r.Limits, max(deadline.Sub(r.cfg.Now()), time.Second))
	if err != nil {
		return "", false, err
	}
	r.Verdicts = append(r.Verdicts, state...)
	if err := r.readItems(ctx); err != nil {
		return "", false, err
	}
	if !r.Settled {
		r.SettleWait = strings.Join(waiting, "; ")
		return fmt.Sprintf("not settled within %s: %s", r.cfg.Settle, r.SettleWait), false, nil
	}
	return fmt.Sprintf("settled after %s: %s; state checked", settledIn.Round(time.Millisecond), r.settledHow(client)),
		finding.OK(state, false), nil
}

// noteEvery paces the settle's progress notes.
const noteEvery = 5 * time.Second

// settledHow says what settling was judged on.
func (r *Run) settledHow(client *kafka.Client) string {
	items := "live orders = RESERVED answers for every item"
	if r.cfg.Ended {
		items = "no order pending and no hold left for any item"
	}
	if client == nil {
		return items + " (no order log to read)"
	}
	return "consumer lag 0, " + items
}

// unsettled lists what the sale still waits for: the consumer's lag, and each item that has not
// settled. A store that does not answer is one more thing to wait for (it may be recovering).
func (r *Run) unsettled(ctx context.Context, client *kafka.Client) ([]string, error) {
	var out []string
	if client != nil {
		p := r.cfg.Profile
		g, err := kafkaconn.GroupLag(ctx, client, p.Kafka.Topic, p.Kafka.Group)
		switch {
		case err != nil:
			out = append(out, fmt.Sprintf("order log unreadable: %v", err))
		case g.Lag > 0:
			out = append(out, fmt.Sprintf("consumer group %s lags %d messages", p.Kafka.Group, g.Lag))
		}
	}
	for _, it := range r.Items {
		w, err := r.itemWaits(ctx, it)
		switch {
		case err != nil:
			out = append(out, fmt.Sprintf("item %s unreadable: %v", it.Item, err))
		case w != "":
			out = append(out, "item "+it.Item+": "+w)
		}
	}
	return out, nil
}

// itemWaits says what one item still waits for, empty when it has settled, reading only what the
// rule needs on every poll: the live orders, or, when reservations must end, the item's whole
// state (pending orders and Redis holds).
func (r *Run) itemWaits(ctx context.Context, it Item) (string, error) {
	if !r.cfg.Ended {
		live, err := r.Target.DB.Live(ctx, r.cfg.Sale, it.Item)
		if err != nil || live == it.LiveBefore+it.Reserved {
			return "", err
		}
		return fmt.Sprintf("%d live orders for %d before and %d RESERVED answers", live, it.LiveBefore, it.Reserved), nil
	}
	st, err := r.Target.State(ctx, r.cfg.Sale, it.Item)
	if err != nil || (st.Live-st.Paid == 0 && st.Holds == 0) {
		return "", err
	}
	return fmt.Sprintf("%d pending in PostgreSQL, %d holds in Redis", st.Live-st.Paid, st.Holds), nil
}

// readItems records each item's live orders and Redis stock after the settle.
func (r *Run) readItems(ctx context.Context) error {
	for i, it := range r.Items {
		st, err := r.Target.State(ctx, r.cfg.Sale, it.Item)
		if err != nil {
			return fmt.Errorf("read item %s: %w", it.Item, err)
		}
		r.Items[i].Live, r.Items[i].RedisLeft = st.Live, st.Stock
	}
	return nil
}

// Reconcile runs reconcile on the settled sale through the target's profile (order by order for
// fsctl serve). It repairs nothing: the pipeline reports.
func (r *Run) Reconcile(ctx context.Context) (string, bool, error) {
	items := make([]string, len(r.Items))
	for i, it := range r.Items {
		items[i] = it.Item
	}
	rep, err := reconcile.Run(ctx, reconcile.Config{SaleID: r.cfg.Sale, Profile: r.cfg.Profile, Items: items, RedisURL: r.cfg.RedisURL,
		PostgresURL: r.cfg.PostgresURL, Kafka: r.cfg.Kafka, Now: r.cfg.Now})
	if err != nil {
		return "", false, err
	}
	r.Result.Reconcile = &rep
	if rep.OK() {
		return fmt.Sprintf("%d items consistent", len(rep.Items)), true, nil
	}
	return strings.Join(reconcileProblems(&rep), "; "), false, nil
}

// reconcileProblems lists every problem the reconcile found, each naming its item.
func reconcileProblems(rep *reconcile.Report) []string {
	var out []string
	if rep == nil {
		return []string{"did not run"}
	}
	for _, it := range rep.Items {
		for _, p := range it.Problems {
			out = append(out, "item "+it.ItemID+": "+p)
		}
	}
	return out
}

// Invariants decides the run: the command's own checks join the verdicts, then every verdict
// held, the sale settled in time, reconcile found nothing, no item has more live orders than
// units and (unless orders may end since) no item was told RESERVED more often than it had units,
// and every RESERVED answer is a live order.
func (r *Run) Invariants(ctx context.Context) (string, bool, error) {
	if r.cfg.Checks != nil {
		own, err := r.cfg.Checks(ctx)
		if err != nil {
			return "", false, err
		}
		r.Verdicts = append(r.Verdicts, own...)
	}
	var fail []string
	for _, v := range r.Verdicts {
		if !v.Passed() {
			fail = append(fail, v.Check+": "+firstOf(v.Problems, v.Detail))
		}
	}
	if !r.Settled {
		fail = append(fail, fmt.Sprintf("the sale did not settle within %s: %s", r.cfg.Settle, r.SettleWait))
	}
	if r.Result.Reconcile == nil || !r.Result.Reconcile.OK() {
		fail = append(fail, "reconcile: "+firstOf(reconcileProblems(r.Result.Reconcile), "no detail"))
	}
	for _, it := range r.Items {
		// The answers against the stock (verify's rules): no more live orders than units and,
		// unless orders may end and their units sell again (Ended), no more RESERVED answers than
		// units left and as many new live orders as RESERVED answers.
		vi := verify.Item{ID: it.Item, Quantity: it.Stock, Stock: it.RedisLeft, Live: it.Live, LiveBefore: it.LiveBefore}
		if !r.cfg.Ended {
			vi.Reserved = verify.Of(it.Reserved)
		}
		for _, p := range verify.Check(vi) {
			if p.Invariant == verify.Oversold || p.Invariant == verify.Durable {
				fail = append(fail, "item "+it.Item+": "+p.String())
			}
		}
	}
	r.Failures, r.Passed = fail, len(fail) == 0
	if r.Passed {
		return "every verdict held, settled, reconciled, nothing sold beyond the stock", true, nil
	}
	return fmt.Sprintf("%d broken: %s", len(fail), firstOf(fail, "")), false, nil
}

// firstOf is the first of a list of problems and how many more there are (the report lists them
// all), or otherwise when there is none.
func firstOf(problems []string, otherwise string) string {
	switch len(problems) {
	case 0:
		return otherwise
	case 1:
		return problems[0]
	}
	return fmt.Sprintf("%s (and %d more)", problems[0], len(problems)-1)
}
