// Package pipeline is the one run of a sale that the demo, the drill and the game day are
// configurations of: the steps that make the sale ready (each command's own: a stack, a sale,
// servers, a checkout to reach), the burst from the load generator, then the same tail for
// every target, read through its profile: settle, reconcile, invariants.
//
// A command opens a Run on its target, lets it read the items before the burst (Open), hands it
// the burst's answers (Answered), and runs Tail's steps. Each rule is judged once, in package
// verify (through blast.CheckState) and in reconcile; what a command adds is its own Checks.
package pipeline

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/fsctl/fsctl/blast"
	"github.com/fsctl/fsctl/internal/contract/finding"
	"github.com/fsctl/fsctl/internal/contract/outcome"
	"github.com/fsctl/fsctl/internal/platform/kafkaconn"
	"github.com/fsctl/fsctl/internal/target/profile"
	"github.com/fsctl/fsctl/loadgen"
	"github.com/fsctl/fsctl/pipeline/steps"
	"github.com/fsctl/fsctl/reconcile"
)

// Config says which sale the pipeline judges, on which target, and what settled means.
type Config struct {
	// Profile describes the target; nil is profile.Default(), the bundled server.
	Profile *profile.Profile
	// Sale is passed to the profile's templates and queries.
	Sale string
	// Items are the items buyers go for; empty means every item sql.items returns.
	Items []string
	// RedisURL and PostgresURL are the target's stores, read through the profile.
	RedisURL, PostgresURL string
	// Kafka carries the order log: its consumer lag says whether the sale has settled.
	Kafka kafkaconn.Conn
	// Settle bounds the wait for the sale to settle after the burst (default 60s).
	Settle time.Duration
	// Ended makes a sale settled only once every reservation has ended (no pending order, no
	// hold left; the profile must declare sql.paid and redis.holds): a run whose buyers pay and
	// cancel, and whose holds expire. Otherwise it is settled once every item has as many live
	// orders as buyers were told RESERVED.
	Ended bool
	// Checks, when set, are the command's own invariants, judged with the pipeline's (the game
	// day's: every RESERVED answer ended, the payment and cancel answers match PostgreSQL).
	Checks func(ctx context.Context) ([]finding.Finding, error)
	// Note, when set, is told what the settle still waits for whenever that changes.
	Note func(format string, a ...any)
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// Result is what the pipeline found.
type Result struct {
	// Items are the items buyers went for, read before the burst and after the settle.
	Items []Item `json:"items"`
	// Verdicts are the burst's response checks, then the state checks after the settle, then
	// the command's own checks.
	Verdicts []finding.Finding `json:"verdicts"`
	// Settled says the sale settled within the bound; SettleWait is what it still waited for.
	Settled    bool   `json:"settled"`
	SettleWait string `json:"settleWait,omitempty"`
	// Reconcile is the reconcile of the settled sale.
	Reconcile *reconcile.Report `json:"reconcile,omitempty"`
	// Passed is the verdict; Failures say why it did not pass.
	Passed   bool     `json:"passed"`
	Failures []string `json:"failures,omitempty"`
}

// Render writes the verdict: "WHAT PASSED" and why, or "WHAT FAILED: n broken" and each thing
// broken.
func (r Result) Render(w io.Writer, what, why string) error {
	if r.Passed {
		_, err := fmt.Fprintf(w, "%s PASSED%s\n", what, why)
		return err
	}
	fmt.Fprintf(w, "%s FAILED: %d broken\n", what, len(r.Failures))
	for _, f := range r.Failures {
		if _, err := fmt.Fprintf(w, "  - %s\n", f); err != nil {
			return err
		}
	}
	return nil
}

// Item is one item buyers went for.
type Item struct {
	Item string `json:"item"`
	// Stock is the item's quantity (sql.item); RedisBefore its Redis stock before the burst.
	Stock       int64 `json:"stock"`
	RedisBefore int64 `json:"redisBefore"`
	// LiveBefore is the live orders the item already had: a run may judge a sale under way.
	LiveBefore int64 `json:"liveBefore"`
	// Reserved counts the distinct RESERVED answers; Live the live orders after the settle.
	Reserved int64 `json:"reserved"`
	Live     int64 `json:"live"`
	// RedisLeft is the Redis stock after the settle.
	RedisLeft int64 `json:"redisLeft"`
}

// Run is one pipeline on one target.
type Run struct {
	Result
	cfg Config
	// Target reads the checkout through its profile.
	Target *profile.Target
	// Targets are the items as the load generator aims at them, Limits their stock and
	// per-user limit as the target's SQL says.
	Targets []loadgen.Target
	Limits  map[loadgen.Target]loadgen.ItemLimit
	records []loadgen.Record
}

// Open connects to the target through its profile and reads the items before the burst: their
// stock, per-user limit, Redis stock and live orders.
func Open(ctx context.Context, cfg Config) (*Run, error) {
	cfg.Profile = profile.OrBundled(cfg.Profile)
	cfg.Settle = cmp.Or(cfg.Settle, time.Minute)
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Note == nil {
		cfg.Note = func(string, ...any) {}
	}
	t, err := profile.Connect(ctx, cfg.Profile, cfg.RedisURL, cfg.PostgresURL)
	if err != nil {
		return nil, fmt.Errorf("connect through profile %s: %w", cfg.Profile.Name, err)
	}
	r := &Run{cfg: cfg, Target: t}
	if err := r.open(ctx); err != nil {
		t.Close()
		return nil, err
	}
	return r, nil
}

func (r *Run) open(ctx context.Context) error {
	items, err := r.Target.Items(ctx, r.cfg.Sale, r.cfg.Items)
	if err != nil {
		return fmt.Errorf("items of sale %s: %w", r.cfg.Sale, err)
	}
	for _, it := range items {
		r.Targets = append(r.Targets, loadgen.Target{SaleID: r.cfg.Sale, ItemID: it})
	}
	if r.Limits, err = blast.LimitsFromDB(ctx, r.Target.DB, r.Targets); err != nil {
		return err
	}
	for _, tg := range r.Targets {
		st, err := r.Target.State(ctx, r.cfg.Sale, tg.ItemID)
		if err != nil {
			return fmt.Errorf("read item %s: %w", tg.ItemID, err)
		}
		r.Items = append(r.Items, Item{Item: tg.ItemID, Stock: r.Limits[tg].Stock, RedisBefore: st.Stock, LiveBefore: st.Live})
	}
	return nil
}

// Close closes the target's stores.
func (r *Run) Close() { r.Target.Close() }

// Ready says what Open read: each item's Redis stock of its quantity, and the per-user limit.
func (r *Run) Ready() string {
	var stock []string
	for _, it := range r.Items {
		stock = append(stock, fmt.Sprintf("%s %d/%d in Redis", it.Item, it.RedisBefore, it.Stock))
	}
	return fmt.Sprintf("items %s; per-user limit %d", strings.Join(stock, ", "), r.Limits[r.Targets[0]].PerUser)
}

// Answered takes the burst's answers and checks them (blast's response verdicts, held to the
// items' stock and per-user limit when limits is true); it returns the burst's summary.
func (r *Run) Answered(res *loadgen.Result, limits bool) blast.Summary {
	r.records = res.Records
	var lim map[loadgen.Target]loadgen.ItemLimit
	if limits {
		lim = r.Limits
	}
	r.Verdicts = blast.CheckResponses(res.Records, lim)
	reserved := reservedPerItem(res.Records)
	for i := range r.Items {
		r.Items[i].Reserved = reserved[r.Items[i].Item]
	}
	return blast.Summarize(res, r.Verdicts)
}

// Tail is the steps every run ends with.
func (r *Run) Tail() []steps.Named {
	return []steps.Named{{Name: "settle", Func: r.Settle}, {Name: "reconcile", Func: r.Reconcile}, {Name: "invariants", Func: r.Invariants}}
}

// reservedPerItem counts the distinct reservations of each item: one per order id, else one per
// buyer and key (a retried key is one reservation).
func reservedPerItem(recs []loadgen.Record) map[string]int64 {
	seen := map[string]bool{}
	out := map[string]int64{}
	for _, r := range recs {
		if r.Outcome != outcome.Reserved {
			continue
		}
		id := r.Target.ItemID + "\x00" + cmp.Or(r.OrderID, r.User+"\x00"+r.Key)
		if !seen[id] {
			seen[id] = true
			out[r.Target.ItemID]++
		}
	}
	return out
}
