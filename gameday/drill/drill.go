// Package drill runs a game-day style run against a running checkout through its target profile:
// the pipeline (package pipeline) with a check that the target answers and a burst in front.
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
	"github.com/fsctl/fsctl/internal/contract/finding"
	"github.com/fsctl/fsctl/internal/platform/kafkaconn"
	"github.com/fsctl/fsctl/internal/target/profile"
	"github.com/fsctl/fsctl/loadgen"
	"github.com/fsctl/fsctl/pipeline"
	"github.com/fsctl/fsctl/pipeline/steps"
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
	// Kafka carries the order log: its consumer lag says whether the sale has settled.
	Kafka kafkaconn.Conn
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
	c.Profile = profile.OrBundled(c.Profile)
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
	cfg   Config
	p     *profile.Profile
	run   *pipeline.Run
	rep   *Report
	steps *steps.Runner
}

// Run drills the checkout: it reads the target through its profile, releases the burst, and
// runs the pipeline's tail (settle, reconcile, invariants). An error means the drill could not
// run; a drill that ran and found something broken returns a Report that has not Passed.
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
	defer d.run.Close()
	err := d.steps.All(ctx, append([]steps.Named{{Name: "burst", Func: d.burst}}, d.run.Tail()...))
	d.rep.Phases, d.rep.Result = d.steps.Steps(), d.run.Result
	if err != nil {
		return nil, fmt.Errorf("drill %w", err)
	}
	return d.rep, nil
}

// connect reads the items, their stock and per-user limit through the profile's SQL and checks
// the target answers HTTP.
func (d *drill) connect(ctx context.Context) (string, bool, error) {
	var err error
	d.run, err = pipeline.Open(ctx, pipeline.Config{Profile: d.p, Sale: d.cfg.Sale, Items: d.cfg.Items,
		RedisURL: d.cfg.RedisURL, PostgresURL: d.cfg.PostgresURL, Kafka: d.cfg.Kafka, Settle: d.cfg.Settle, Now: d.cfg.Now})
	if err != nil {
		return "", false, err
	}
	if err := blast.Probe(ctx, &http.Client{Timeout: 5 * time.Second}, d.cfg.Target, loadgen.HealthPath(d.p, d.cfg.Sale)); err != nil {
		d.run.Close()
		return "", false, err
	}
	return fmt.Sprintf("%s answers; %s", d.cfg.Target, d.run.Ready()), true, nil
}

// burst releases the buyers through the profile and checks their answers.
func (d *drill) burst(ctx context.Context) (string, bool, error) {
	// A fresh prefix per drill: buyers of an earlier drill on the same sale already bought.
	prefix := "drill-" + strconv.FormatInt(d.cfg.Now().UnixNano()%1e9, 36) + "-"
	plan := loadgen.Plan{BaseURL: d.cfg.Target, Targets: d.run.Targets, Buyers: d.cfg.Buyers, UserPrefix: prefix,
		Profile: d.p, Clicks: d.cfg.Clicks, Conns: d.cfg.Conns, Timeout: requestTimeout,
		At: d.cfg.Now().Add(loadgen.ReleaseLead(d.p, d.cfg.Buyers)), Now: d.cfg.Now}
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
	d.rep.Blast = d.run.Answered(res, true)
	var outs []string
	for _, o := range d.rep.Blast.Outcomes {
		outs = append(outs, fmt.Sprintf("%s %d", o.Outcome, o.Count))
	}
	return fmt.Sprintf("%d buyers, %d requests: %s; p99 %.1fms", res.Buyers, len(res.Records),
		strings.Join(outs, ", "), d.rep.Blast.Latency.P99), finding.OK(d.run.Verdicts, false), nil
}

func okWord(ok bool) string {
	if ok {
		return "OK"
	}
	return "FAIL"
}
