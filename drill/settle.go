package drill

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/fsctl/fsctl/blast"
	"github.com/fsctl/fsctl/events"
	"github.com/fsctl/fsctl/finding"
	"github.com/fsctl/fsctl/reconcile"
	"github.com/fsctl/fsctl/verify"
)

// settle waits, up to the Settle bound, until the consumer has nothing left to write and every
// item has as many live orders as buyers were told RESERVED, then checks the stores against
// the answers.
func (d *drill) settle(ctx context.Context) (string, bool, error) {
	deadline := d.cfg.Now().Add(d.cfg.Settle)
	var client *kafka.Client
	if len(d.cfg.Brokers) > 0 && d.p.Kafka.Topic != "" && d.p.Kafka.Group != "" {
		// Its own transport: the shared default caches metadata for seconds and calls a
		// topic created moments ago unknown.
		tr := &kafka.Transport{DialTimeout: 5 * time.Second, MetadataTTL: time.Second}
		defer tr.CloseIdleConnections()
		client = &kafka.Client{Addr: kafka.TCP(d.cfg.Brokers...), Timeout: 5 * time.Second, Transport: tr}
	}
	start := d.cfg.Now()
	waiting, err := verify.Settle(ctx, d.cfg.Settle, 0, func(ctx context.Context) ([]string, error) {
		return d.unsettled(ctx, client)
	})
	if err != nil {
		return "", false, err
	}
	d.rep.Settled = len(waiting) == 0
	settledIn := d.cfg.Now().Sub(start)
	state, err := blast.CheckState(ctx, d.t, d.cfg.Sale, d.records, d.limits, max(deadline.Sub(d.cfg.Now()), time.Second))
	if err != nil {
		return "", false, err
	}
	d.rep.Verdicts = append(d.rep.Verdicts, state...)
	if err := d.readItems(ctx); err != nil {
		return "", false, err
	}
	if !d.rep.Settled {
		d.rep.SettleWait = strings.Join(waiting, "; ")
		return fmt.Sprintf("not settled within %s: %s", d.cfg.Settle, d.rep.SettleWait), false, nil
	}
	return fmt.Sprintf("settled after %s: %s; state checked", settledIn.Round(time.Millisecond), d.settledHow(client)),
		finding.OK(state, false), nil
}

// settledHow says what settling was judged on.
func (d *drill) settledHow(client *kafka.Client) string {
	if client == nil {
		return "live orders = RESERVED answers for every item (no order log to read)"
	}
	return "consumer lag 0, live orders = RESERVED answers for every item"
}

// unsettled lists what the sale still waits for: the consumer's lag, and each item whose live
// orders differ from its RESERVED answers.
func (d *drill) unsettled(ctx context.Context, client *kafka.Client) ([]string, error) {
	var out []string
	if client != nil {
		g, err := events.GroupLag(ctx, client, d.p.Kafka.Topic, d.p.Kafka.Group)
		switch {
		case err != nil:
			out = append(out, fmt.Sprintf("order log unreadable: %v", err))
		case g.Lag > 0:
			out = append(out, fmt.Sprintf("consumer group %s lags %d messages", d.p.Kafka.Group, g.Lag))
		}
	}
	for _, it := range d.rep.Items {
		live, err := d.t.DB.Live(ctx, d.cfg.Sale, it.Item)
		if err != nil {
			return nil, fmt.Errorf("live orders of %s: %w", it.Item, err)
		}
		if live != it.LiveBefore+it.Reserved {
			out = append(out, fmt.Sprintf("item %s: %d live orders for %d before and %d RESERVED answers", it.Item, live, it.LiveBefore, it.Reserved))
		}
	}
	return out, nil
}

// readItems records each item's live orders and Redis stock after the settle.
func (d *drill) readItems(ctx context.Context) error {
	for i, it := range d.rep.Items {
		st, err := d.t.State(ctx, d.cfg.Sale, it.Item)
		if err != nil {
			return fmt.Errorf("read item %s: %w", it.Item, err)
		}
		d.rep.Items[i].Live, d.rep.Items[i].RedisLeft = st.Live, st.Stock
	}
	return nil
}

// reconcile runs reconcile on the settled sale through the target's profile (order by order for
// fsctl serve). It repairs nothing: the drill reports.
func (d *drill) reconcile(ctx context.Context) (string, bool, error) {
	items := make([]string, len(d.rep.Items))
	for i, it := range d.rep.Items {
		items[i] = it.Item
	}
	rep, err := reconcile.Run(ctx, reconcile.Config{SaleID: d.cfg.Sale, Profile: d.p, Items: items, RedisURL: d.cfg.RedisURL,
		PostgresURL: d.cfg.PostgresURL, Brokers: d.cfg.Brokers, Now: d.cfg.Now})
	if err != nil {
		return "", false, err
	}
	d.rep.Reconcile = &rep
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

// invariants decides the drill: every verdict held, the sale settled in time, reconcile found
// nothing, and no item sold more units than its stock.
func (d *drill) invariants(context.Context) (string, bool, error) {
	var fail []string
	for _, v := range d.rep.Verdicts {
		if !v.Passed() {
			fail = append(fail, v.Check+": "+firstOf(v.Problems))
		}
	}
	if !d.rep.Settled {
		fail = append(fail, fmt.Sprintf("the sale did not settle within %s: %s", d.cfg.Settle, d.rep.SettleWait))
	}
	if d.rep.Reconcile == nil || !d.rep.Reconcile.OK() {
		fail = append(fail, "reconcile: "+firstOf(reconcileProblems(d.rep.Reconcile)))
	}
	for _, it := range d.rep.Items {
		if it.LiveBefore+it.Reserved > it.Stock {
			fail = append(fail, fmt.Sprintf("item %s: %d units RESERVED on top of %d live orders, of a stock of %d", it.Item, it.Reserved, it.LiveBefore, it.Stock))
		}
	}
	d.rep.Failures, d.rep.Passed = fail, len(fail) == 0
	if d.rep.Passed {
		return "every verdict held, settled, reconciled, nothing sold beyond the stock", true, nil
	}
	return fmt.Sprintf("%d broken", len(fail)), false, nil
}

// firstOf is the first of a list of problems and how many more there are: the report lists them all.
func firstOf(problems []string) string {
	switch len(problems) {
	case 0:
		return "no detail"
	case 1:
		return problems[0]
	}
	return fmt.Sprintf("%s (and %d more)", problems[0], len(problems)-1)
}
