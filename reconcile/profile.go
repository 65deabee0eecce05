package reconcile

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/fsctl/fsctl/events"
	"github.com/fsctl/fsctl/orders"
	"github.com/fsctl/fsctl/profile"
	"github.com/fsctl/fsctl/stock"
)

// profileRun is one run through a profile other than fsctl serve's.
type profileRun struct {
	cfg   Config
	p     *profile.Profile
	t     *profile.Target
	kafka *kafka.Client
	items []string
}

// runProfile reconciles a checkout through what its profile declares only: each item's
// quantity, sold counter and live orders against its Redis stock and buyers (package verify's
// rules, and the buyers both sides know). A finding must show in two consecutive reads; with Fix
// it applies the fixes the profile declares and reports the state after them.
func runProfile(ctx context.Context, cfg Config) (Report, error) {
	p := *cfg.Profile
	p.Kafka.Topic, p.Kafka.DeadLetter, p.Kafka.Group = cfg.OrdersTopic, cfg.DeadLetterTopic, cfg.ConsumerGroup
	t, err := profile.Connect(ctx, &p, cfg.RedisURL, cfg.PostgresURL)
	if err != nil {
		return Report{}, err
	}
	defer t.Close()
	r := &profileRun{cfg: cfg, p: &p, t: t}
	if len(cfg.Brokers) > 0 && p.Kafka.Topic != "" && p.Kafka.Group != "" {
		tr := &kafka.Transport{DialTimeout: cfg.Timeout, MetadataTTL: time.Second}
		r.kafka = &kafka.Client{Addr: kafka.TCP(cfg.Brokers...), Timeout: cfg.Timeout, Transport: tr}
		defer tr.CloseIdleConnections()
	}
	ictx, cancel := context.WithTimeout(ctx, cfg.Timeout)
	items, err := t.Items(ictx, cfg.SaleID, cfg.Items)
	cancel()
	if err != nil {
		return Report{}, fmt.Errorf("profile %s: items of sale %s: %w", p.Name, cfg.SaleID, err)
	}
	r.items = items
	return fixPasses(ctx, cfg, r.inspect)
}

// lag reads the order consumer's lag into rep.Kafka: 0 when the profile declares no order log,
// -1 (unknown: orders may be on their way) when it declares one that cannot be read.
func (r *profileRun) lag(ctx context.Context, rep *Report) int64 {
	switch {
	case r.p.Kafka.Topic == "" || r.p.Kafka.Group == "":
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

// inspect reads every item, and once more after cfg.Confirm when the first read finds anything,
// keeping only what both reads found.
func (r *profileRun) inspect(ctx context.Context) (Report, error) {
	rep := Report{SaleID: r.cfg.SaleID, Profile: r.p.Name, At: r.cfg.Now().UTC()}
	first, err := r.readAll(ctx, r.lag(ctx, &rep))
	if err != nil {
		return Report{}, err
	}
	if !anyProfileFindings(first) {
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
		second[i].findings = r.confirm(first[i].findings, second[i])
	}
	rep.Items = itemReports(second)
	return rep, nil
}

// readAll reads and compares every item once.
func (r *profileRun) readAll(ctx context.Context, lag int64) ([]profileItem, error) {
	out := make([]profileItem, 0, len(r.items))
	for _, item := range r.items {
		it, err := r.read(ctx, item, lag)
		if err != nil {
			return nil, fmt.Errorf("profile %s: item %s: %w", r.p.Name, item, err)
		}
		it.findings = r.analyze(&it)
		out = append(out, it)
	}
	return out, nil
}

// read takes one item's state: PostgreSQL first, then Redis, so an order that moves meanwhile
// shows in Redis and not yet in PostgreSQL (in flight), never the other way round. The buyers are
// read after the counters for the same reason.
func (r *profileRun) read(ctx context.Context, item string, lag int64) (profileItem, error) {
	ctx, cancel := context.WithTimeout(ctx, 2*r.cfg.Timeout)
	defer cancel()
	it := profileItem{lag: lag}
	var err error
	if it.state, err = r.t.State(ctx, r.cfg.SaleID, item); err != nil {
		return it, err
	}
	if r.p.Redis.Buyers == "" {
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

func (r *profileRun) kafkaReport(ctx context.Context) *KafkaReport {
	ctx, cancel := context.WithTimeout(ctx, 2*r.cfg.Timeout)
	defer cancel()
	k := &KafkaReport{DeadLetterTopic: r.p.Kafka.DeadLetter}
	var errs []string
	g, err := events.GroupLag(ctx, r.kafka, r.p.Kafka.Topic, r.p.Kafka.Group)
	if err != nil {
		errs = append(errs, err.Error())
	}
	k.Group = g
	if r.p.Kafka.DeadLetter != "" {
		// The profile cannot say which dead letters are this sale's: they are all counted.
		offs, err := events.TopicOffsets(ctx, r.kafka, r.p.Kafka.DeadLetter)
		if err != nil {
			errs = append(errs, err.Error())
		}
		k.DeadLettersTotal = offs.Messages()
		k.DeadLetters = k.DeadLettersTotal
	}
	k.Error = strings.Join(errs, "; ")
	return k
}

func anyProfileFindings(items []profileItem) bool {
	for _, it := range items {
		if len(it.findings) > 0 {
			return true
		}
	}
	return false
}

// itemReports turns the compared items into the report's rows.
func itemReports(items []profileItem) []ItemReport {
	out := make([]ItemReport, 0, len(items))
	for _, it := range items {
		s := it.state
		c := orders.ItemCounts{ItemID: s.Item, Quantity: s.Quantity, Sold: s.Sold, Pending: s.Live - s.Paid, Paid: s.Paid}
		r := ItemReport{ItemID: s.Item, Quantity: s.Quantity, Stock: s.Stock, Holds: s.Holds, Counts: c,
			MaxLivePerUser: maxUnits(it.pgBuyers), InFlight: it.inFlight, Problems: []string{}}
		for _, sh := range s.Inventory.Shards {
			r.Shards = append(r.Shards, stock.ShardState{Shard: sh.Keys.Shard, Stock: sh.Stock, Holds: sh.Holds, Buyers: sh.Buyers})
		}
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
