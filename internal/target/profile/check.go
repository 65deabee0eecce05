package profile

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"time"

	"github.com/fsctl/fsctl/internal/contract/finding"
	"github.com/fsctl/fsctl/internal/platform/kafkaconn"
	"github.com/fsctl/fsctl/internal/platform/redisconn"
)

// CheckReport is a profile checked against a live target.
type CheckReport struct {
	Profile string `json:"profile"`
	Source  string `json:"source"`
	Sale    string `json:"sale"`
	// Lines are the findings, one per profile field tried (the field is the finding's check).
	Lines []finding.Finding `json:"lines"`
}

// Failed reports whether any line failed.
func (r CheckReport) Failed() bool { return !finding.OK(r.Lines, false) }

// CheckConfig says which sale and target to check the profile against.
type CheckConfig struct {
	Sale string
	// Items restricts the check to these items; default: what sql.items returns.
	Items []string
	// Base is the checkout's base URL; empty skips the HTTP endpoints.
	Base string
	// Secret replaces an hs256 profile's secret.
	Secret string
	// Kafka reaches the order log the profile names; no brokers skips it.
	Kafka kafkaconn.Conn
	// Client makes the HTTP probes; nil means a 3 s client.
	Client *http.Client
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// Check tries everything the profile declares against the live target, every piece of Fit in
// order: the token and the purchase template (rendered, never sent), the HTTP endpoints, the
// items and every query for every item, every key of every shard, and the order log. It never
// changes the target.
func (t *Target) Check(ctx context.Context, cfg CheckConfig) CheckReport {
	if cfg.Client == nil {
		cfg.Client = &http.Client{Timeout: 3 * time.Second}
	}
	f := Fit{P: t.P, Sale: cfg.Sale, Secret: cfg.Secret, Now: cfg.Now}
	var items []string
	var stores []finding.Finding
	if err := t.pingPostgres(ctx); err != nil {
		stores = []finding.Finding{found("sql", finding.Fail, err.Error(), "check --postgres-url")}
	} else {
		listed, err := t.Items(ctx, cfg.Sale, nil)
		var fi finding.Finding
		items, fi = f.Items(listed, err, cfg.Items)
		queries, shards := f.Queries(ctx, t.DB, items)
		stores = slices.Concat([]finding.Finding{fi}, queries, t.keys(ctx, f, items, shards))
	}
	lines := slices.Concat(f.Templates(cfg.Base, items), f.HTTP(ctx, cfg.Client, cfg.Base), stores, f.Kafka(ctx, cfg.Kafka))
	return CheckReport{Profile: t.P.Name, Source: t.P.Source(), Sale: cfg.Sale, Lines: lines}
}

// keys reads every item's keys, once Redis answers.
func (t *Target) keys(ctx context.Context, f Fit, items []string, shards []int) []finding.Finding {
	if len(items) == 0 {
		return nil
	}
	if err := redisconn.Check(ctx, t.Redis()); err != nil {
		return []finding.Finding{found("redis", finding.Fail, err.Error(), "check --redis-url ("+redisconn.Forms+")")}
	}
	var out []finding.Finding
	for i, item := range items {
		out = append(out, f.Keys(ctx, t.Stocks, item, shards[i])...)
	}
	return out
}

// Render prints the check as a table, then a verdict.
func (r CheckReport) Render(w io.Writer) error {
	fmt.Fprintf(w, "profile %s (%s) against sale %s\n", r.Profile, r.Source, r.Sale)
	if err := finding.Table(w, r.Lines); err != nil {
		return err
	}
	verdict := "PROFILE OK: every template renders, every query runs, every key exists"
	if r.Failed() {
		verdict = "PROFILE DOES NOT FIT THE TARGET: see the failed lines"
	}
	_, err := fmt.Fprintln(w, verdict)
	return err
}

// WriteJSON writes the check as one JSON document.
func (r CheckReport) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}
