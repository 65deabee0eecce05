package reconcile

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/segmentio/kafka-go"

	"github.com/fsctl/fsctl/events"
	"github.com/fsctl/fsctl/orders"
	"github.com/fsctl/fsctl/profile"
	"github.com/fsctl/fsctl/sale"
	"github.com/fsctl/fsctl/stock"
	"github.com/fsctl/fsctl/verify"
)

// Config says which sale to reconcile and where its state lives.
type Config struct {
	SaleID      string
	RedisURL    string
	PostgresURL string
	// Profile is the target's profile; nil is the bundled server's. fsctl serve is reconciled
	// order by order (holds, order records, the order log) and repaired with its own scripts; any
	// other target through what its profile declares only.
	Profile *profile.Profile
	// Items restricts the run to these items; empty: every item of the sale.
	Items []string
	// Confirm is the pause of a profile's run between the two reads a finding must show in.
	Confirm time.Duration
	// Brokers, when set, add the order log: consumer lag, dead letters, and re-publishing orphans.
	Brokers []string
	// OrdersTopic, DeadLetterTopic and ConsumerGroup default to the profile's (the bundled
	// server's without one).
	OrdersTopic, DeadLetterTopic, ConsumerGroup string
	// Fix repairs what is safe to repair and explains every change.
	Fix bool
	// RebuildRedis restores the sale's Redis state from PostgreSQL (after Redis lost it), once the
	// order log has drained into PostgreSQL.
	RebuildRedis bool
	// DrainTimeout bounds the wait for the consumer to drain Kafka before a rebuild.
	DrainTimeout time.Duration
	// OrphanAge is how old a hold without an order must be before it counts as orphaned rather
	// than in flight.
	OrphanAge time.Duration
	// Timeout bounds each network call.
	Timeout time.Duration
	// Now is the clock (injected by tests).
	Now func() time.Time
	// Progress, when set, receives a line per long step (the drain wait, the rebuild).
	Progress io.Writer
}

// DefaultConsumerGroup is the bundled server's order consumer group.
const DefaultConsumerGroup = events.DefaultConsumerGroup

// bundled reports whether the target is fsctl serve, reconciled order by order.
func (c Config) bundled() bool { return c.Profile == nil || c.Profile.IsDeep() }

// Validate says what the configuration asks of its target that the target does not offer.
func (c Config) Validate() error {
	if !c.bundled() && c.RebuildRedis {
		return fmt.Errorf("rebuilding Redis is only for fsctl serve; profile %s declares a checkout fsctl cannot rebuild", c.Profile.Name)
	}
	return nil
}

func (c *Config) defaults() {
	if c.Confirm <= 0 {
		c.Confirm = 500 * time.Millisecond
	}
	if c.DrainTimeout <= 0 {
		c.DrainTimeout = time.Minute
	}
	if c.OrphanAge <= 0 {
		c.OrphanAge = 30 * time.Second
	}
	if c.Timeout <= 0 {
		c.Timeout = 5 * time.Second
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Progress == nil {
		c.Progress = io.Discard
	}
}

// Report is one reconciliation of a sale across Redis, PostgreSQL and Kafka.
type Report struct {
	SaleID string `json:"sale"`
	// Profile names the target profile a non-deep run read the checkout through.
	Profile string       `json:"profile,omitempty"`
	At      time.Time    `json:"at"`
	Items   []ItemReport `json:"items"`
	// Kafka is the order log's side; nil without brokers.
	Kafka *KafkaReport `json:"kafka,omitempty"`
	// Actions lists what --fix or --rebuild-redis changed, each with its reason.
	Actions []Action `json:"actions,omitempty"`
}

// Action is one change a repair made.
type Action struct {
	ItemID string `json:"item,omitempty"`
	What   string `json:"what"`
	Why    string `json:"why"`
	Error  string `json:"error,omitempty"`
}

// OK reports whether no item breaks an invariant.
func (r Report) OK() bool {
	for _, it := range r.Items {
		if len(it.Problems) > 0 {
			return false
		}
	}
	return true
}

// conns are one run's connections.
type conns struct {
	cfg    Config
	rdb    *redis.Client
	st     *stock.Store
	db     *orders.Store
	kafka  *kafka.Client
	pub    *events.Publisher
	closer []func()
}

func (c *conns) close() {
	for i := len(c.closer) - 1; i >= 0; i-- {
		c.closer[i]()
	}
}

func open(ctx context.Context, cfg Config) (*conns, error) {
	c := &conns{cfg: cfg}
	opts, err := redis.ParseURL(cfg.RedisURL)
	if err != nil {
		return nil, fmt.Errorf("redis url %q: %w", cfg.RedisURL, err)
	}
	opts.DialTimeout, opts.ReadTimeout, opts.WriteTimeout = cfg.Timeout, cfg.Timeout, cfg.Timeout
	c.rdb = redis.NewClient(opts)
	c.closer = append(c.closer, func() { _ = c.rdb.Close() })
	pctx, cancel := context.WithTimeout(ctx, cfg.Timeout)
	defer cancel()
	if err := c.rdb.Ping(pctx).Err(); err != nil {
		c.close()
		return nil, fmt.Errorf("redis %s unreachable: %w", opts.Addr, err)
	}
	c.st = stock.New(c.rdb)
	if c.db, err = orders.Open(pctx, cfg.PostgresURL); err != nil {
		c.close()
		return nil, err
	}
	c.closer = append(c.closer, c.db.Close)
	if len(cfg.Brokers) > 0 {
		tr := &kafka.Transport{DialTimeout: cfg.Timeout, MetadataTTL: time.Second}
		c.kafka = &kafka.Client{Addr: kafka.TCP(cfg.Brokers...), Timeout: cfg.Timeout, Transport: tr}
		c.closer = append(c.closer, tr.CloseIdleConnections)
	}
	return c, nil
}

// publisher is created on first use: only a repair re-publishes.
func (c *conns) publisher() *events.Publisher {
	if c.pub == nil {
		c.pub = events.NewPublisher(c.cfg.Brokers, c.cfg.OrdersTopic)
		c.closer = append(c.closer, func() { _ = c.pub.Close() })
	}
	return c.pub
}

// maxFixPasses bounds how often --fix repairs and looks again: a structural repair (a hold put
// back) can only then show whether the unit count is right.
const maxFixPasses = 3

// Run reconciles one sale: with Fix it repairs what is safe, pass by pass, and reports the state
// after the last one; with RebuildRedis (fsctl serve only) it first restores Redis from
// PostgreSQL.
func Run(ctx context.Context, cfg Config) (Report, error) {
	if err := cfg.Validate(); err != nil {
		return Report{}, err
	}
	cfg.defaults()
	if p := cfg.Profile; p != nil { // the order log's names in cfg, when given, replace the profile's
		cfg.OrdersTopic = cmp.Or(cfg.OrdersTopic, p.Kafka.Topic)
		cfg.DeadLetterTopic = cmp.Or(cfg.DeadLetterTopic, p.Kafka.DeadLetter)
		cfg.ConsumerGroup = cmp.Or(cfg.ConsumerGroup, p.Kafka.Group)
	}
	if !cfg.bundled() {
		return runProfile(ctx, cfg)
	}
	cfg.OrdersTopic, cfg.DeadLetterTopic, cfg.ConsumerGroup = events.LogNames(cfg.OrdersTopic, cfg.DeadLetterTopic, cfg.ConsumerGroup)
	c, err := open(ctx, cfg)
	if err != nil {
		return Report{}, err
	}
	defer c.close()
	sl, err := c.db.LoadSale(ctx, cfg.SaleID)
	if err != nil {
		return Report{}, err
	}
	var actions []Action
	if cfg.RebuildRedis { // the whole sale: the rebuild pauses it and restores every item
		if actions, err = c.rebuild(ctx, sl); err != nil {
			return Report{SaleID: sl.ID, At: cfg.Now().UTC(), Actions: actions}, err
		}
	}
	if sl, err = only(sl, cfg.Items); err != nil {
		return Report{}, err
	}
	rep, err := fixPasses(ctx, cfg, func(ctx context.Context) (Report, error) { return c.inspect(ctx, sl) })
	rep.Actions = append(actions, rep.Actions...)
	return rep, err
}

// only narrows the sale to the given items (all when none is given).
func only(sl sale.Sale, items []string) (sale.Sale, error) {
	if len(items) == 0 {
		return sl, nil
	}
	var kept []sale.Item
	for _, id := range items {
		it, ok := sl.Item(id)
		if !ok {
			return sl, fmt.Errorf("sale %s has no item %q", sl.ID, id)
		}
		kept = append(kept, it)
	}
	sl.Items = kept
	return sl, nil
}

// fixPasses inspects, then with Fix applies every finding's repair and inspects again, until a
// pass repairs nothing or maxFixPasses; the report is the last inspection's, with every action.
func fixPasses(ctx context.Context, cfg Config, inspect func(context.Context) (Report, error)) (Report, error) {
	rep, err := inspect(ctx)
	if err != nil {
		return rep, err
	}
	var actions []Action
	for pass := 0; cfg.Fix && pass < maxFixPasses; pass++ {
		done := repair(ctx, rep, cfg.Timeout)
		if len(done) == 0 {
			break
		}
		actions = append(actions, done...)
		if rep, err = inspect(ctx); err != nil {
			return rep, err
		}
	}
	rep.Actions = actions
	return rep, nil
}

// repair applies every finding's repair once, each within twice the call timeout, and says what
// it did.
func repair(ctx context.Context, rep Report, timeout time.Duration) []Action {
	var out []Action
	for _, it := range rep.Items {
		for _, f := range it.Findings {
			if f.Apply == nil {
				continue
			}
			a := Action{ItemID: it.ItemID, What: f.Fix, Why: f.Check + ": " + f.Detail}
			if f.Order != "" {
				a.What += " (order " + f.Order + ")"
			} else if f.User != "" {
				a.What += " (buyer " + f.User + ")"
			}
			rctx, cancel := context.WithTimeout(ctx, 2*timeout)
			if err := f.Apply(rctx); err != nil {
				a.Error = err.Error()
			}
			cancel()
			out = append(out, a)
		}
	}
	return out
}

// inspect compares the sale twice when the first look finds anything, and keeps only what both
// looks found: the reads are not one snapshot, and an order moving between Redis and PostgreSQL
// during a sale must not be reported (or repaired) as lost.
func (c *conns) inspect(ctx context.Context, sl sale.Sale) (Report, error) {
	rep := Report{SaleID: sl.ID, At: c.cfg.Now().UTC()}
	var lag int64
	if c.kafka != nil {
		rep.Kafka = c.kafkaReport(ctx, sl.ID)
		lag = rep.Kafka.Group.Lag
		if rep.Kafka.Error != "" {
			lag = -1 // unknown: any order missing from PostgreSQL may still be in the log
		}
	}
	first, err := c.compare(ctx, sl, lag)
	if err != nil || !anyFindings(first) {
		rep.Items = first
		return rep, err
	}
	second, err := c.compare(ctx, sl, lag)
	if err != nil {
		return rep, err
	}
	for i := range second {
		seen := map[string]bool{}
		for _, f := range first[i].Findings {
			seen[f.key()] = true
		}
		var kept []Finding
		for _, f := range second[i].Findings {
			if seen[f.key()] {
				kept = append(kept, f)
			}
		}
		second[i].Findings = kept
		second[i].Problems = problems(kept)
	}
	rep.Items = second
	return rep, nil
}

func anyFindings(items []ItemReport) bool {
	for _, it := range items {
		if len(it.Findings) > 0 {
			return true
		}
	}
	return false
}

// compare reads both sides of every item once.
func (c *conns) compare(ctx context.Context, sl sale.Sale, lag int64) ([]ItemReport, error) {
	start := c.cfg.Now()
	base, err := Sale(ctx, c.st, c.db, sl)
	if err != nil {
		return nil, err
	}
	states, err := readItems(ctx, c.st, c.db, sl)
	if err != nil {
		return nil, err
	}
	a := analyzer{sale: sl, st: c.st, readStart: start, now: c.cfg.Now(), orphanAge: c.cfg.OrphanAge, lag: lag}
	if c.kafka != nil {
		a.republish = func(ctx context.Context, h stock.Hold, it sale.Item) error {
			sec, nsec := h.OrderID.Time().UnixTime()
			return c.publisher().PublishOrderPlaced(ctx, events.OrderPlaced{
				OrderID: h.OrderID, SaleID: sl.ID, ItemID: it.ID, UserID: h.UserID, Slot: h.Slot, Shard: h.Shard,
				CreatedAt: time.Unix(sec, nsec).UTC(), ExpiresAt: h.ExpiresAt, IdemKey: h.IdemKey,
			})
		}
	}
	for i := range base {
		an := a.item(states[i])
		base[i].InFlight = an.inFlight
		base[i].Findings = append(an.findings, c.totals(base[i], states[i], an, lag)...)
		base[i].Problems = problems(base[i].Findings)
	}
	return base, nil
}

// totals are the item-level checks (package verify's rules): oversell, the sold counter and,
// once nothing is in flight and nothing else is wrong, the unit count. Holds are checked hold by
// hold by the analysis, which says which one.
func (c *conns) totals(r ItemReport, s itemState, an analysis, lag int64) []Finding {
	it := r.verifyItem(0)
	settled := an.inFlight == 0 && lag == 0
	return invariantFindings(verify.Check(it), func(f *Finding, p verify.Problem) bool {
		switch p.Invariant {
		case verify.SoldCounter:
			f.Fix = fmt.Sprintf("set sold to %d under the item's row lock", it.Live)
			f.Apply = c.recountSold(s.item.ID)
		case verify.Units:
			if !settled {
				return false
			}
			if len(an.findings) > 0 {
				f.Fix = "after the other findings are repaired"
				return true
			}
			shard := 0
			for _, sh := range s.shards {
				if sh.Stock > s.shards[shard].Stock {
					shard = sh.Shard
				}
			}
			delta := p.Delta
			f.Fix = fmt.Sprintf("move shard %d's counter by %+d", shard, delta)
			f.Apply = func(ctx context.Context) error {
				return c.st.AdjustStock(ctx, c.cfg.SaleID, s.item.ID, shard, delta)
			}
		case verify.Holds:
			return false
		}
		return true
	})
}

func (c *conns) recountSold(itemID string) func(context.Context) error {
	return func(ctx context.Context) error {
		_, err := c.db.Pool().Exec(ctx, `UPDATE sale_items SET sold = (SELECT count(*) FROM orders
			WHERE sale_id = $1 AND item_id = $2 AND status IN ('PENDING', 'PAID')) WHERE sale_id = $1 AND id = $2`,
			c.cfg.SaleID, itemID)
		return err
	}
}

func problems(fs []Finding) []string {
	out := []string{}
	for _, f := range fs {
		out = append(out, f.Check+": "+f.Detail)
	}
	return out
}

// WriteJSON writes the report as one indented JSON document.
func (r Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(struct {
		Report
		OK bool `json:"ok"`
	}{r, r.OK()})
}
