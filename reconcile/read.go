package reconcile

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/segmentio/kafka-go"

	"github.com/fsctl/fsctl/internal/checkout/stock"
	"github.com/fsctl/fsctl/internal/platform/kafkaconn"
	"github.com/fsctl/fsctl/internal/target/profile"
)

// run is one reconciliation of a sale. Every target is read through its profile: each item's
// quantity, sold counter and live orders against its Redis stock, holds and buyers (package
// verify's rules). Where the target is fsctl serve, its book adds the order-by-order comparison
// and the repairs made with its own scripts.
type run struct {
	cfg   Config
	p     *profile.Profile
	t     *profile.Target
	kafka *kafka.Client
	items []string
	// book is fsctl serve's capability (holds, order records and the order log, compared order
	// by order); nil for any other target.
	book   *book
	closer []func()
}

// open connects to the target's stores and the order log; with ping, both stores must answer
// (RecordLog runs while Redis is down, and reads PostgreSQL only, retrying it).
func open(ctx context.Context, cfg Config, p *profile.Profile, ping bool) (*run, error) {
	t, err := profile.Connect(ctx, p, cfg.RedisURL, cfg.PostgresURL)
	if err != nil {
		return nil, err
	}
	r := &run{cfg: cfg, p: p, t: t, closer: []func(){t.Close}}
	if ping {
		if err := t.Ping(ctx, cfg.Timeout); err != nil {
			if where := stranded(ctx, cfg, t); where != "" {
				err = fmt.Errorf("%w\n%s", err, where)
			}
			r.close()
			return nil, err
		}
	}
	if len(cfg.Kafka.Brokers) > 0 && p.Kafka.Topic != "" && p.Kafka.Group != "" {
		var closeIdle func()
		if r.kafka, closeIdle, err = kafkaconn.NewClient(cfg.Kafka, cfg.Timeout); err != nil {
			r.close()
			return nil, err
		}
		r.closer = append(r.closer, closeIdle)
	}
	if hasBook(p) {
		if r.book, err = openBook(ctx, r); err != nil {
			r.close()
			return nil, err
		}
	}
	return r, nil
}

// hasBook reports whether the target offers fsctl serve's book (its holds, order records and
// order log, compared order by order and repaired with its own scripts): the one capability
// beyond the profile that reconcile asks about, asked here.
func hasBook(p *profile.Profile) bool { return p.Bundled() }

func (r *run) close() {
	for i := len(r.closer) - 1; i >= 0; i-- {
		r.closer[i]()
	}
}

// resolveItems settles which items the run reads: the given ones, or every item of the sale.
func (r *run) resolveItems(ctx context.Context) error {
	if r.items != nil { // fsctl serve's book took them from the sale
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, r.cfg.Timeout)
	defer cancel()
	items, err := r.t.Items(ctx, r.cfg.SaleID, r.cfg.Items)
	if err != nil {
		return fmt.Errorf("profile %s: items of sale %s: %w", r.p.Name, r.cfg.SaleID, err)
	}
	r.items = items
	return nil
}

// lag reads the order consumer's lag into rep.Kafka: 0 when the profile declares no order log,
// -1 (unknown: orders may be on their way) when it declares one that cannot be read. fsctl
// serve's book read without brokers tells an order in flight by its age instead.
func (r *run) lag(ctx context.Context, rep *Report) int64 {
	switch {
	case r.p.Kafka.Topic == "" || r.p.Kafka.Group == "":
		return 0
	case r.kafka == nil && r.book != nil:
		return 0
	case r.kafka == nil:
		return -1
	}
	rep.Kafka = r.kafkaReport(ctx)
	if rep.Kafka.Error != "" {
		return -1
	}
	return rep.Kafka.Group.Lag
}

func (r *run) kafkaReport(ctx context.Context) *KafkaReport {
	ctx, cancel := context.WithTimeout(ctx, 2*r.cfg.Timeout)
	defer cancel()
	k := &KafkaReport{DeadLetterTopic: r.p.Kafka.DeadLetter}
	var errs []string
	g, err := kafkaconn.GroupLag(ctx, r.kafka, r.p.Kafka.Topic, r.p.Kafka.Group)
	if err != nil {
		errs = append(errs, err.Error())
	}
	k.Group = g
	if r.p.Kafka.DeadLetter != "" {
		offs, err := kafkaconn.TopicOffsets(ctx, r.kafka, r.p.Kafka.DeadLetter)
		if err == nil {
			k.DeadLettersTotal = offs.Messages()
			// Only fsctl serve's dead letters say which sale they are of; elsewhere all count.
			k.DeadLetters = k.DeadLettersTotal
			if r.book != nil {
				k.DeadLetters, err = r.countDeadLetters(ctx, offs)
			}
		}
		if err != nil {
			errs = append(errs, err.Error())
		}
	}
	k.Error = strings.Join(errs, "; ")
	return k
}

// inspect reads every item, and once more after cfg.Confirm when the first read finds anything,
// keeping only what both reads found: the reads are not one snapshot, and an order moving
// between Redis and PostgreSQL during a sale must not be reported (or repaired) as lost.
func (r *run) inspect(ctx context.Context) (Report, error) {
	rep := Report{SaleID: r.cfg.SaleID, Profile: r.p.Name, OrderByOrder: r.book != nil, At: r.cfg.Now().UTC()}
	first, err := r.readAll(ctx, r.lag(ctx, &rep))
	if err != nil {
		return Report{}, err
	}
	if !anyFindings(first) {
		rep.Items = itemReports(first)
		return rep, nil
	}
	fmt.Fprintf(r.cfg.Progress, "reconcile: %s: something differs; reading again in %s to confirm\n", r.cfg.SaleID, r.cfg.Confirm)
	select {
	case <-ctx.Done():
		return Report{}, ctx.Err()
	case <-time.After(r.cfg.Confirm):
	}
	second, err := r.readAll(ctx, r.lag(ctx, &rep))
	if err != nil {
		return Report{}, err
	}
	for i := range second {
		second[i].findings = r.confirm(first[i].findings, *second[i])
	}
	rep.Items = itemReports(second)
	return rep, nil
}

// readAll reads and compares every item once: each through the profile, then, where the target
// has its book, every item order by order.
func (r *run) readAll(ctx context.Context, lag int64) ([]*itemRead, error) {
	out := make([]*itemRead, 0, len(r.items))
	for _, item := range r.items {
		it, err := r.read(ctx, item, lag)
		if err != nil {
			return nil, fmt.Errorf("profile %s: item %s: %w", r.p.Name, item, err)
		}
		out = append(out, it)
	}
	if r.book != nil {
		if err := r.book.read(ctx, r, out, lag); err != nil {
			return nil, err
		}
	}
	for _, it := range out {
		it.findings = r.analyze(it)
	}
	return out, nil
}

// read takes one item's state: PostgreSQL first, then Redis, so an order that moves meanwhile
// shows in Redis and not yet in PostgreSQL (in flight), never the other way round. The buyers are
// read after the counters for the same reason.
func (r *run) read(ctx context.Context, item string, lag int64) (*itemRead, error) {
	ctx, cancel := context.WithTimeout(ctx, 2*r.cfg.Timeout)
	defer cancel()
	it := &itemRead{lag: lag}
	var err error
	if it.state, err = r.t.State(ctx, r.cfg.SaleID, item); err != nil {
		return it, err
	}
	// fsctl serve's buyers keys hold slots, not units: its book compares them order by order.
	if r.p.Redis.Buyers == "" || r.book != nil {
		return it, nil
	}
	pg, ok, err := r.t.DB.LiveBuyers(ctx, r.cfg.SaleID, item)
	if err != nil || !ok {
		return it, err
	}
	if it.redisBuyers, err = r.t.Stocks.Buyers(ctx, r.cfg.SaleID, item, it.state.Shards); err != nil {
		return it, err
	}
	it.pgBuyers, it.hasBuyers = pg, true
	return it, nil
}

func anyFindings(items []*itemRead) bool {
	for _, it := range items {
		if len(it.findings) > 0 {
			return true
		}
	}
	return false
}

// itemReports turns the compared items into the report's rows.
func itemReports(items []*itemRead) []ItemReport {
	out := make([]ItemReport, 0, len(items))
	for _, it := range items {
		r := it.row
		s := it.state
		r.ItemID, r.Quantity, r.Stock, r.Holds, r.InFlight = s.Item, s.Quantity, s.Stock, s.Holds, it.inFlight
		r.Counts.ItemID, r.Counts.Quantity, r.Counts.Sold, r.Counts.Pending, r.Counts.Paid = s.Item, s.Quantity, s.Sold, s.Live-s.Paid, s.Paid
		if r.Shards == nil {
			for _, sh := range s.Inventory.Shards {
				r.Shards = append(r.Shards, stock.ShardState{Shard: sh.Keys.Shard, Stock: sh.Stock, Holds: sh.Holds, Buyers: sh.Buyers})
			}
		}
		r.MaxLivePerUser = max(r.MaxLivePerUser, maxUnits(it.pgBuyers))
		for _, f := range it.findings {
			r.Findings = append(r.Findings, f.Finding)
		}
		r.Problems = problems(r.Findings)
		out = append(out, r)
	}
	return out
}

func maxUnits(m map[string]int64) int {
	n := int64(0)
	for _, v := range m {
		n = max(n, v)
	}
	return int(n)
}

// stranded says, when the target's Redis is a cluster with masters that do not answer, which of
// the sale's shards live on them: their counters and holds cannot be read, so nothing about them
// can be reconciled until the node is back. Empty when it cannot tell (or nothing is stranded).
func stranded(ctx context.Context, cfg Config, t *profile.Target) string {
	cc, ok := t.Redis().(*redis.ClusterClient)
	if !ok {
		return ""
	}
	ctx, cancel := context.WithTimeout(ctx, cfg.Timeout)
	defer cancel()
	items, err := t.Items(ctx, cfg.SaleID, cfg.Items)
	if err != nil {
		return ""
	}
	down := map[string]bool{}
	per := map[string][]string{}
	var order []string
	for _, item := range items {
		n, err := t.DB.Shards(ctx, cfg.SaleID, item)
		if err != nil {
			return ""
		}
		keys := t.P.Keys(cfg.SaleID, item, n)
		names := make([]string, len(keys))
		for i, k := range keys {
			names[i] = k.Stock
		}
		for i, name := range names {
			m, err := cc.MasterForKey(ctx, name) // from the slot map: a dead master still owns its slots
			if err != nil {
				return ""
			}
			node := m.Options().Addr
			dead, seen := down[node]
			if !seen {
				dead = m.Ping(ctx).Err() != nil
				down[node] = dead
				if dead {
					order = append(order, node)
				}
			}
			if dead {
				per[node] = append(per[node], fmt.Sprintf("%s shard %d (%s)", item, keys[i].Shard, keys[i].Stock))
			}
		}
	}
	var b strings.Builder
	for _, node := range order {
		fmt.Fprintf(&b, "master %s does not answer; the sale's shards on it cannot be read, their units and holds stranded until it is back: %s. "+
			"Start it again (its AOF brings them back); if it comes back empty, reconcile --rebuild-redis restores them from PostgreSQL\n", node, strings.Join(per[node], ", "))
	}
	return strings.TrimSuffix(b.String(), "\n")
}
