// Package drill runs a game-day style run against a running checkout through its target profile:
// a burst, the wait until the sale settles, and a reconcile.
package drill

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/fsctl/fsctl/blast"
	"github.com/fsctl/fsctl/finding"
	"github.com/fsctl/fsctl/loadgen"
	"github.com/fsctl/fsctl/outcome"
	"github.com/fsctl/fsctl/profile"
	"github.com/fsctl/fsctl/steps"
)

// Config says which checkout to drill and how hard.
type Config struct {
	// Profile describes the target; nil is profile.Default(), the bundled server.
	Profile *profile.Profile
	// Target is the checkout's base URL.
	Target string
	// Sale is passed to the profile's templates and queries.
	Sale string
	// Items are the items buyers go for, round-robin; empty means every item sql.items returns.
	Items []string
	// RedisURL and PostgresURL are the target's stores, read through the profile.
	RedisURL, PostgresURL string
	// Brokers carry the order log: its consumer lag says whether the sale has settled.
	Brokers []string
	// Secret, when set, replaces an HS256 profile's secret (the bundled server's --jwt-secret).
	Secret string
	// Buyers is the size of the burst (default 2000).
	Buyers int
	// Rate, when positive, releases the buyers at this many per second (the open model)
	// instead of all at one instant.
	Rate float64
	// Conns is the pool of connections the buyers share (default 64).
	Conns int
	// Clicks per buyer (default 1), each with a new key: never replays of one key, since a
	// foreign checkout need not be idempotent.
	Clicks int
	// Settle bounds the wait for the sale to settle after the burst (default 60s).
	Settle time.Duration
	// Progress, when set, gets a line as each phase ends.
	Progress io.Writer
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

func (c *Config) defaults() {
	if c.Profile == nil {
		c.Profile = profile.Default()
	}
	c.Buyers = cmp.Or(c.Buyers, 2000)
	c.Conns = cmp.Or(c.Conns, 64)
	c.Clicks = cmp.Or(c.Clicks, 1)
	c.Settle = cmp.Or(c.Settle, time.Minute)
	if c.Progress == nil {
		c.Progress = io.Discard
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	c.Target = strings.TrimRight(c.Target, "/")
}

// requestTimeout bounds one purchase of the burst.
const requestTimeout = 10 * time.Second

// drill is one Run's state.
type drill struct {
	cfg     Config
	p       *profile.Profile
	t       *profile.Target
	rep     *Report
	targets []loadgen.Target
	limits  map[loadgen.Target]loadgen.ItemLimit
	records []loadgen.Record
	steps   *steps.Runner
}

// Run drills the checkout: it reads the target through its profile, releases the burst, waits
// until the sale settles, reconciles it and checks the invariants. An error means the drill
// could not run; a drill that ran and found something broken returns a Report that has not
// Passed.
func Run(ctx context.Context, cfg Config) (*Report, error) {
	cfg.defaults()
	if cfg.Target == "" || cfg.Sale == "" {
		return nil, errors.New("drill: a target URL and a sale are needed")
	}
	d := &drill{cfg: cfg, p: cfg.Profile, rep: &Report{Profile: cfg.Profile.Name, Target: cfg.Target, Sale: cfg.Sale},
		steps: &steps.Runner{Now: cfg.Now, Print: func(line string) { fmt.Fprintln(cfg.Progress, "drill: "+line) }}}
	if err := d.steps.Run(ctx, "target", d.connect); err != nil {
		return nil, fmt.Errorf("drill %w", err)
	}
	defer d.t.Close()
	for _, s := range []struct {
		name string
		run  steps.Func
	}{{"burst", d.burst}, {"settle", d.settle}, {"reconcile", d.reconcile}, {"invariants", d.invariants}} {
		if err := d.steps.Run(ctx, s.name, s.run); err != nil {
			return nil, fmt.Errorf("drill %w", err)
		}
	}
	d.rep.Phases = d.steps.Steps()
	return d.rep, nil
}

// connect reads the items, their stock and per-user limit through the profile's SQL and checks
// the target answers HTTP.
func (d *drill) connect(ctx context.Context) (string, bool, error) {
	var err error
	if d.t, err = profile.Connect(ctx, d.p, d.cfg.RedisURL, d.cfg.PostgresURL); err != nil {
		return "", false, fmt.Errorf("connect through profile %s: %w", d.p.Name, err)
	}
	items, err := d.t.Items(ctx, d.cfg.Sale, d.cfg.Items)
	if err != nil {
		d.t.Close()
		return "", false, fmt.Errorf("items of sale %s: %w", d.cfg.Sale, err)
	}
	for _, it := range items {
		d.targets = append(d.targets, loadgen.Target{SaleID: d.cfg.Sale, ItemID: it})
	}
	if d.limits, err = blast.LimitsFromDB(ctx, d.t.DB, d.targets); err == nil {
		err = blast.Probe(ctx, &http.Client{Timeout: 5 * time.Second}, d.cfg.Target, loadgen.HealthPath(d.p, d.cfg.Sale))
	}
	if err != nil {
		d.t.Close()
		return "", false, err
	}
	var stock []string
	for _, tg := range d.targets {
		st, err := d.t.State(ctx, d.cfg.Sale, tg.ItemID)
		if err != nil {
			d.t.Close()
			return "", false, fmt.Errorf("read item %s: %w", tg.ItemID, err)
		}
		d.rep.Items = append(d.rep.Items, ItemResult{Item: tg.ItemID, Stock: d.limits[tg].Stock, RedisBefore: st.Stock, LiveBefore: st.Live})
		stock = append(stock, fmt.Sprintf("%s %d/%d in Redis", tg.ItemID, st.Stock, d.limits[tg].Stock))
	}
	return fmt.Sprintf("%s answers; items %s; per-user limit %d", d.cfg.Target, strings.Join(stock, ", "),
		d.limits[d.targets[0]].PerUser), true, nil
}

// burst releases the buyers through the profile and checks their answers.
func (d *drill) burst(ctx context.Context) (string, bool, error) {
	// A fresh prefix per drill: buyers of an earlier drill on the same sale already bought.
	prefix := "drill-" + strconv.FormatInt(d.cfg.Now().UnixNano()%1e9, 36) + "-"
	plan := loadgen.Plan{BaseURL: d.cfg.Target, Targets: d.targets, Buyers: d.cfg.Buyers, UserPrefix: prefix,
		Profile: d.p, Clicks: d.cfg.Clicks, Conns: d.cfg.Conns, Timeout: requestTimeout,
		At: d.cfg.Now().Add(releaseLead(d.p, d.cfg.Buyers)), Now: d.cfg.Now}
	if d.cfg.Secret != "" {
		plan.Secret = []byte(d.cfg.Secret)
	}
	if d.cfg.Rate > 0 {
		plan.Schedule = &loadgen.Schedule{Rate: d.cfg.Rate}
	}
	res, err := loadgen.Run(ctx, plan)
	if err != nil {
		return "", false, err
	}
	d.records = res.Records
	d.rep.Verdicts = blast.CheckResponses(res.Records, d.limits)
	d.rep.Blast = blast.Summarize(res, d.rep.Verdicts)
	reserved := reservedPerItem(res.Records)
	for i := range d.rep.Items {
		d.rep.Items[i].Reserved = reserved[d.rep.Items[i].Item]
	}
	var outs []string
	for _, o := range d.rep.Blast.Outcomes {
		outs = append(outs, fmt.Sprintf("%s %d", o.Outcome, o.Count))
	}
	return fmt.Sprintf("%d buyers, %d requests: %s; p99 %.1fms", res.Buyers, len(res.Records),
		strings.Join(outs, ", "), d.rep.Blast.Latency.P99), finding.OK(d.rep.Verdicts, false), nil
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

func okWord(ok bool) string {
	if ok {
		return "OK"
	}
	return "FAIL"
}

// releaseLead is how far ahead the release is set: time to prepare every buyer before it. An RS256
// signature costs about a millisecond on one core (BenchmarkProfilePrepare), so those get a
// millisecond a buyer on top of the two seconds every burst gets.
func releaseLead(p *profile.Profile, buyers int) time.Duration {
	lead := 2 * time.Second
	if p.Token.Type == profile.TokenRS256 {
		lead += time.Duration(buyers) * time.Millisecond
	}
	return lead
}
