package reconcile

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/fsctl/fsctl/internal/checkout/events"
	"github.com/fsctl/fsctl/internal/contract/finding"
	"github.com/fsctl/fsctl/internal/contract/sale"
	"github.com/fsctl/fsctl/internal/platform/kafkaconn"
	"github.com/fsctl/fsctl/internal/target/profile"
)

// Config says which sale to reconcile and where its state lives.
type Config struct {
	SaleID      string
	RedisURL    string
	PostgresURL string
	// Profile is the target's profile; nil is the bundled server's. Every target is read through
	// its profile; fsctl serve is also reconciled order by order (holds, order records, the order
	// log) and repaired with its own scripts.
	Profile *profile.Profile
	// Items restricts the run to these items; empty: every item of the sale.
	Items []string
	// Confirm is the pause between the two reads a finding must show in.
	Confirm time.Duration
	// Kafka, when it names brokers, adds the order log: consumer lag, dead letters, and
	// re-publishing orphans.
	Kafka kafkaconn.Conn
	// OrdersTopic, DeadLetterTopic and ConsumerGroup default to the profile's (the bundled
	// server's without one).
	OrdersTopic, DeadLetterTopic, ConsumerGroup string
	// Fix repairs what is safe to repair and explains every change.
	Fix bool
	// RebuildRedis restores the sale's Redis state from PostgreSQL (after Redis lost it), once the
	// order log is recorded in PostgreSQL.
	RebuildRedis bool
	// LogRecorded says RecordLog recorded the order log after Redis lost the sale's state: the
	// rebuild fences and reloads without reading the log (and waiting for Kafka) again. Only for a
	// Redis that lost the state (see RecordLog), never for one that may still grant reservations.
	LogRecorded bool
	// DrainTimeout bounds how long a rebuild tries to record the order log in PostgreSQL (Kafka or
	// PostgreSQL may be down meanwhile).
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

// Validate says what the configuration asks of its target that the target does not offer.
func (c Config) Validate() error {
	if p := profile.OrBundled(c.Profile); c.RebuildRedis && !hasBook(p) {
		return fmt.Errorf("rebuilding Redis is only for fsctl serve; profile %s declares a checkout fsctl cannot rebuild", p.Name)
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
	// Profile names the target profile the checkout was read through.
	Profile string `json:"profile,omitempty"`
	// OrderByOrder says the target is fsctl serve and was also compared order by order.
	OrderByOrder bool         `json:"orderByOrder"`
	At           time.Time    `json:"at"`
	Items        []ItemReport `json:"items"`
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

// maxFixPasses bounds how often --fix repairs and looks again: a structural repair (a hold put
// back) can only then show whether the unit count is right.
const maxFixPasses = 3

// Run reconciles one sale through its target's profile (the bundled server's when none is
// given): with Fix it repairs what is safe, pass by pass, and reports the state after the last
// one; with RebuildRedis (fsctl serve only) it first restores Redis from PostgreSQL.
func Run(ctx context.Context, cfg Config) (Report, error) {
	if err := cfg.Validate(); err != nil {
		return Report{}, err
	}
	p := cfg.resolve()
	r, err := open(ctx, cfg, &p, true)
	if err != nil {
		return Report{}, err
	}
	defer r.close()
	var actions []Action
	if cfg.RebuildRedis { // the whole sale: the rebuild pauses it and restores every item
		if actions, err = r.rebuild(ctx); err != nil {
			return Report{SaleID: cfg.SaleID, Profile: p.Name, At: cfg.Now().UTC(), Actions: actions}, err
		}
	}
	if err := r.resolveItems(ctx); err != nil {
		return Report{}, err
	}
	rep, err := fixPasses(ctx, cfg, r.inspect)
	rep.Actions = append(actions, rep.Actions...)
	return rep, err
}

// resolve fills cfg's defaults and returns the profile the run reads through: the order log's
// names in cfg, when given, replace the profile's.
func (c *Config) resolve() profile.Profile {
	c.defaults()
	p := *profile.OrBundled(c.Profile)
	c.OrdersTopic = cmp.Or(c.OrdersTopic, p.Kafka.Topic)
	c.DeadLetterTopic = cmp.Or(c.DeadLetterTopic, p.Kafka.DeadLetter)
	c.ConsumerGroup = cmp.Or(c.ConsumerGroup, p.Kafka.Group)
	p.Kafka.Topic, p.Kafka.DeadLetter, p.Kafka.Group = c.OrdersTopic, c.DeadLetterTopic, c.ConsumerGroup
	return p
}

// RecordLog records the order log in PostgreSQL up to where it stands, for the rebuild of a Redis
// that lost the sale's state (killed and restarted empty): it needs PostgreSQL and Kafka, not
// Redis, so it runs while Redis comes back, and the rebuild after it (LogRecorded) fences and
// reloads without waiting for Kafka. That is safe because a Redis that lost the state grants and
// confirms nothing until it is reloaded (a reserve finds no stock, server.confirm no order), so
// every order a buyer was told RESERVED reached the log before the loss, and a read of the log
// begun after it holds them all; what lands later was never confirmed, and is recorded or dropped
// as stale by the fence like any late hand-off. The hold-release markers died with Redis, as the
// rebuild's wipe would have removed them. Never for a Redis that may still hold the sale
// (partitioned, frozen): a plain rebuild wipes it before it reads the log.
func RecordLog(ctx context.Context, cfg Config) (int, error) {
	if err := cfg.Validate(); err != nil {
		return 0, err
	}
	if p := profile.OrBundled(cfg.Profile); !hasBook(p) {
		return 0, fmt.Errorf("recording the order log is only for fsctl serve; profile %s declares another checkout", p.Name)
	}
	p := cfg.resolve()
	r, err := open(ctx, cfg, &p, false)
	if err != nil {
		return 0, err
	}
	defer r.close()
	if r.kafka == nil {
		return 0, errNoBrokers
	}
	return r.catchUp(ctx, lostRedis{})
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

// repair applies every finding's repair once, each within twice the call timeout, through
// finding.ApplyAll (the one way a repair is made), and says what it did.
func repair(ctx context.Context, rep Report, timeout time.Duration) []Action {
	var out []Action
	var fs []finding.Finding
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
			out = append(out, a)
			fs = append(fs, finding.Finding{Check: f.Check, Status: finding.Fail, Repair: a.What, Apply: f.Apply})
		}
	}
	for i, done := range finding.ApplyAll(ctx, fs, 2*timeout) { // one Applied a finding, in order: each fails
		out[i].Error = done.Error
	}
	return out
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
