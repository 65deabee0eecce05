package preflight

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/fsctl/fsctl/internal/contract/finding"
)

// readyBody is the bundled server's GET /readyz.
type readyBody struct {
	Status  string            `json:"status"`
	Version string            `json:"version"`
	Checks  map[string]string `json:"checks"`
}

// salePage is the part of GET /api/v1/sales/{sale} a server's view of the sale is compared on.
type salePage struct {
	OpensAt      time.Time  `json:"opensAt"`
	ClosesAt     *time.Time `json:"closesAt"`
	Paused       bool       `json:"paused"`
	PerUserLimit int        `json:"perUserLimit"`
	HoldTTL      string     `json:"holdTTL"`
	Items        []struct {
		ID       string `json:"id"`
		Quantity int64  `json:"quantity"`
	} `json:"items"`
}

// checkServers: every instance answers its health endpoint, they run one version, and fsctl
// serve's instances are ready (/readyz) and serve the sale as PostgreSQL defines it.
func checkServers(ctx context.Context, e *env) []finding.Finding {
	if len(e.cfg.Servers) == 0 {
		return []finding.Finding{{Group: "servers", Check: "servers", Status: finding.Skip, Detail: "no --server given"}}
	}
	probe := health
	extra := []finding.Finding{{Group: "servers", Check: "versions and sale view", Status: finding.Skip,
		Detail: "they read fsctl serve's /readyz and sale page; not available for this target"}}
	if e.bundled != nil {
		probe, extra = checkServer, nil
	} else if e.prof.HTTP.Health == "" {
		return []finding.Finding{{Group: "servers", Check: "servers", Status: finding.Skip, Detail: "the profile declares no health endpoint (http.health)"}}
	}
	out := make([][]finding.Finding, len(e.cfg.Servers))
	versions := make([]string, len(e.cfg.Servers))
	var wg sync.WaitGroup
	for i, base := range e.cfg.Servers {
		wg.Go(func() { out[i], versions[i] = probe(ctx, e, strings.TrimRight(base, "/")) })
	}
	wg.Wait()
	all := slices.Concat(out...)
	seen := map[string][]string{}
	for i, v := range versions {
		if v != "" {
			seen[v] = append(seen[v], e.cfg.Servers[i])
		}
	}
	if len(seen) > 1 {
		var parts []string
		for _, v := range slices.Sorted(maps.Keys(seen)) {
			parts = append(parts, fmt.Sprintf("%s on %s", v, strings.Join(seen[v], ", ")))
		}
		all = append(all, finding.Finding{Group: "servers", Check: "versions", Status: finding.Fail, Detail: strings.Join(parts, "; "),
			Fix: "finish the rollout before the sale: instances of different versions may disagree on the rules"})
	}
	return append(all, extra...)
}

// health GETs the profile's health endpoint of one instance: up when it answers 2xx. It knows no
// version.
func health(ctx context.Context, e *env, base string) ([]finding.Finding, string) {
	r := finding.Finding{Group: "servers", Check: "ready " + base}
	url := e.prof.Endpoint(base, e.prof.HTTP.Health, e.cfg.SaleID)
	resp, err := get(ctx, e.cfg.HTTP, url)
	if err != nil {
		r.Status, r.Detail, r.Fix = finding.Fail, err.Error(), "start the checkout there, or correct --server"
		return []finding.Finding{r}, ""
	}
	resp.Body.Close()
	r.Detail = fmt.Sprintf("GET %s answered %d", e.prof.HTTP.Health, resp.StatusCode)
	if resp.StatusCode/100 != 2 {
		r.Status, r.Fix = finding.Fail, "the target says it is not healthy: look at its health endpoint's answer and logs"
		return []finding.Finding{r}, ""
	}
	r.Status = finding.Pass
	return []finding.Finding{r}, ""
}

// checkServer reads one fsctl serve instance's /readyz (its dependencies and version) and its
// view of the sale.
func checkServer(ctx context.Context, e *env, base string) ([]finding.Finding, string) {
	ready := finding.Finding{Group: "servers", Check: "ready " + base}
	var body readyBody
	status, err := getJSON(ctx, e.cfg.HTTP, base+"/readyz", &body)
	switch {
	case err != nil:
		ready.Status, ready.Detail = finding.Fail, err.Error()
		ready.Fix = "start fsctl serve there, or correct --server"
		return []finding.Finding{ready}, ""
	case status != http.StatusOK || body.Status != "ready":
		var failing []string
		for _, k := range slices.Sorted(maps.Keys(body.Checks)) {
			if body.Checks[k] != "ok" {
				failing = append(failing, k+": "+body.Checks[k])
			}
		}
		ready.Status = finding.Fail
		ready.Detail = fmt.Sprintf("/readyz answered %d %q, version %s; %s", status, body.Status, body.Version, strings.Join(failing, "; "))
		ready.Fix = "fix what /readyz names; the server cannot take purchases"
	default:
		ready.Status, ready.Detail = finding.Pass, "version "+body.Version
	}
	return []finding.Finding{ready, serverView(ctx, e, base)}, body.Version
}

func serverView(ctx context.Context, e *env, base string) finding.Finding {
	r := finding.Finding{Group: "servers", Check: "sale view " + base}
	if e.bundled.sale == nil {
		r.Status, r.Detail = finding.Skip, "the sale is not in PostgreSQL"
		return r
	}
	var page salePage
	status, err := getJSON(ctx, e.cfg.HTTP, base+"/api/v1/sales/"+e.cfg.SaleID, &page)
	if err == nil && status != http.StatusOK {
		err = fmt.Errorf("GET /api/v1/sales/%s answered %d", e.cfg.SaleID, status)
	}
	if err != nil {
		r.Status, r.Detail = finding.Fail, err.Error()
		return r
	}
	sl := *e.bundled.sale
	var diff []string
	cmp := func(field string, server, stored any) {
		if fmt.Sprint(server) != fmt.Sprint(stored) {
			diff = append(diff, fmt.Sprintf("%s: server %v, PostgreSQL %v", field, server, stored))
		}
	}
	closes := time.Time{}
	if page.ClosesAt != nil {
		closes = *page.ClosesAt
	}
	cmp("opensAt", stamp(page.OpensAt), stamp(sl.OpensAt))
	cmp("closesAt", stamp(closes), stamp(sl.ClosesAt))
	cmp("paused", page.Paused, sl.Paused)
	cmp("perUserLimit", page.PerUserLimit, sl.PerUserLimit)
	cmp("holdTTL", page.HoldTTL, sl.HoldTTL.String())
	quantities := map[string]int64{}
	for _, it := range page.Items {
		quantities[it.ID] = it.Quantity
	}
	for _, it := range sl.Items {
		q, ok := quantities[it.ID]
		if !ok {
			diff = append(diff, "item "+it.ID+" missing")
			continue
		}
		cmp("items."+it.ID+".quantity", q, it.Quantity)
	}
	if len(diff) > 0 {
		r.Status, r.Detail = finding.Fail, strings.Join(diff, "; ")
		r.Fix = "the server's read model is stale or it reads another database: check its --postgres-url"
		return r
	}
	r.Status, r.Detail = finding.Pass, fmt.Sprintf("agrees with PostgreSQL (%d items)", len(sl.Items))
	return r
}

func get(ctx context.Context, client *http.Client, url string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, fmt.Errorf("GET %s: %w", url, err)
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("GET %s: %w", url, err)
	}
	return resp, nil
}

// getJSON GETs url and decodes a JSON body whatever the status, which it returns.
func getJSON(ctx context.Context, client *http.Client, url string, into any) (int, error) {
	resp, err := get(ctx, client, url)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return resp.StatusCode, fmt.Errorf("GET %s: %w", url, err)
	}
	if err := json.Unmarshal(b, into); err != nil {
		return resp.StatusCode, fmt.Errorf("GET %s answered %d, not JSON: %.80q", url, resp.StatusCode, b)
	}
	return resp.StatusCode, nil
}
