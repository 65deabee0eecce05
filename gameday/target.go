package gameday

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/fsctl/fsctl/blast"
	"github.com/fsctl/fsctl/internal/contract/finding"
	"github.com/fsctl/fsctl/internal/harness/netfault"
	"github.com/fsctl/fsctl/internal/platform/kafkaconn"
	"github.com/fsctl/fsctl/internal/target/profile"
	"github.com/fsctl/fsctl/loadgen"
	"github.com/fsctl/fsctl/pipeline"
)

// Target is a running checkout of a team's own that a scenario is played against (fsctl gameday
// drill -f): read and bought from only through its profile, its faults the scenario's
// exec, http and toxic steps. fsctl starts and stops nothing of it.
type Target struct {
	Profile *profile.Profile
	// URL is the checkout's base URL; Sale and Items what the buyers go for (every item of the
	// profile's sql.items when Items is empty).
	URL   string
	Sale  string
	Items []string
	// RedisURL, PostgresURL and Kafka are the target's stores, read through the profile to judge.
	RedisURL, PostgresURL string
	Kafka                 kafkaconn.Conn
	// Secret, when set, replaces an HS256 profile's secret.
	Secret string
	// Conns is the pool of connections the buyers share (default 64).
	Conns int
	// Toxiproxy is the team's Toxiproxy server the toxic steps name proxies of; nil when the
	// scenario has none.
	Toxiproxy *netfault.Client
}

// Proxies are the Toxiproxy proxies the scenario's toxic steps name, sorted, once each.
func (s Scenario) Proxies() []string {
	var out []string
	for _, st := range s.Steps {
		if nf, ok := st.Fault.(netFault); ok && nf.Proxy != "" && !slices.Contains(out, nf.Proxy) {
			out = append(out, nf.Proxy)
		}
	}
	slices.Sort(out)
	return out
}

// targetPhases are a drill's phases: fsctl owns no process of the target, so there is no stack,
// no sale set-up and no fleet; its settle heals nothing.
func (r *run) targetPhases() []phaseFunc {
	return []phaseFunc{{"target", r.connectTarget}, {"blast", r.blast}, {"settle", r.settle}, {"reconcile", r.reconcile}, {"invariants", r.invariants}}
}

// connectTarget reads the target through its profile, checks it answers, and finds every proxy a
// toxic step names, removing what toxics of fsctl's a killed run left on them.
func (r *run) connectTarget(ctx context.Context) (string, error) {
	t := r.cfg.Target
	var err error
	r.pipe, err = pipeline.Open(ctx, pipeline.Config{Profile: t.Profile, Sale: t.Sale, Items: t.Items,
		RedisURL: t.RedisURL, PostgresURL: t.PostgresURL, Kafka: t.Kafka, Settle: r.cfg.Scenario.Settle,
		Checks: r.targetChecks, Note: r.note, Now: r.cfg.Now})
	if err != nil {
		return "", err
	}
	r.closeStores = r.pipe.Close
	if err := blast.Probe(ctx, &http.Client{Timeout: 5 * time.Second}, t.URL, loadgen.HealthPath(t.Profile, t.Sale)); err != nil {
		return "", err
	}
	note := fmt.Sprintf("%s answers; %s", t.URL, r.pipe.Ready())
	if names := r.cfg.Scenario.Proxies(); len(names) > 0 {
		if t.Toxiproxy == nil {
			return "", fmt.Errorf("the scenario's toxic steps name proxies (%s): give the Toxiproxy server (--toxiproxy URL)", strings.Join(names, ", "))
		}
		r.env.Toxiproxy, r.env.Proxies = t.Toxiproxy, map[string]*netfault.Proxy{}
		for _, name := range names {
			if r.env.Proxies[name], err = t.Toxiproxy.Proxy(name); err != nil {
				return "", err
			}
		}
		left, err := t.Toxiproxy.Sweep(names...)
		if err != nil {
			return "", err
		}
		note += fmt.Sprintf("; toxiproxy %s: proxies %s", t.Toxiproxy.URL, strings.Join(names, ", "))
		if left > 0 {
			note += fmt.Sprintf(" (%d toxic(s) an earlier run left removed)", left)
		}
	}
	return note, nil
}

// targetPlan is the buyers' plan against the target: the scenario's schedule through the
// profile's purchase and token, each buyer with fresh keys (a foreign checkout need not be
// idempotent), no follow-ups (the profile declares no payment).
func (r *run) targetPlan(at time.Time) loadgen.Plan {
	t, sc := r.cfg.Target, r.cfg.Scenario
	plan := loadgen.Plan{BaseURL: strings.TrimRight(t.URL, "/"), Targets: r.pipe.Targets, Buyers: sc.Buyers, Profile: t.Profile,
		UserPrefix: fmt.Sprintf("drill-%d-", at.UnixMilli()), Clicks: 1, Retries: sc.Retries, RetryAfter: sc.RetryAfter, At: at, Conns: max(t.Conns, 1),
		Timeout:  10 * time.Second,
		Schedule: &loadgen.Schedule{Rate: sc.Rate, Ramp: sc.Ramp, Offsets: sc.Arrivals}, Now: r.cfg.Now}
	if t.Secret != "" {
		plan.Secret = []byte(t.Secret)
	}
	return plan
}

// targetChecks are the drill's own invariants beside the pipeline's (every RESERVED answer a live
// order, nothing oversold, the same key never two answers): no 500 and the availability budget.
func (r *run) targetChecks(context.Context) ([]finding.Finding, error) {
	return []finding.Finding{checkNoInternal(r.records, nil), checkAvailability(r.rep.Availability, r.cfg.Scenario.Budget)}, nil
}
