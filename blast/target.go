package blast

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"

	"github.com/fsctl/fsctl/internal/target/profile"
	"github.com/fsctl/fsctl/loadgen"
)

// saleInfo is the part of GET /api/v1/sales/{sale} the invariant checks need.
type saleInfo struct {
	PerUserLimit int `json:"perUserLimit"`
	PerSaleLimit int `json:"perSaleLimit"`
	// Reveal: the sale hides its purchase route until the opening (fsctl serve's reveal option).
	Reveal bool `json:"reveal"`
	Items  []struct {
		ID       string `json:"id"`
		Quantity int64  `json:"quantity"`
	} `json:"items"`
}

// FetchLimits reads each target's stock and per-user limit from the sale page the profile
// declares (fsctl serve's) before the burst. An unreachable target or an item the sale does not
// have is an error, before anything is released.
func FetchLimits(ctx context.Context, client *http.Client, base string, prof *profile.Profile, targets []loadgen.Target) (map[loadgen.Target]loadgen.ItemLimit, error) {
	out, _, err := fetchPages(ctx, client, base, prof, targets)
	return out, err
}

// fetchPages is FetchLimits, and also names the sales whose page says they reveal their purchase
// path at the opening.
func fetchPages(ctx context.Context, client *http.Client, base string, prof *profile.Profile, targets []loadgen.Target) (map[loadgen.Target]loadgen.ItemLimit, []string, error) {
	if prof.HTTP.SalePage == "" {
		return nil, nil, fmt.Errorf("profile %s declares no http.salePage: give --stock and --limit, or --postgres-url to read them with its SQL", prof.Name)
	}
	out := map[loadgen.Target]loadgen.ItemLimit{}
	pages := map[string]saleInfo{}
	var reveals []string
	for _, t := range targets {
		info, ok := pages[t.SaleID]
		if !ok {
			var err error
			if info, err = fetchSale(ctx, client, prof.Endpoint(base, prof.HTTP.SalePage, t.SaleID)); err != nil {
				return nil, nil, err
			}
			pages[t.SaleID] = info
			if info.Reveal {
				reveals = append(reveals, t.SaleID)
			}
		}
		found := false
		for _, it := range info.Items {
			if it.ID == t.ItemID {
				out[t] = loadgen.ItemLimit{Stock: it.Quantity, PerUser: info.PerUserLimit, PerSale: info.PerSaleLimit}
				found = true
			}
		}
		if !found {
			return nil, nil, fmt.Errorf("sale %s has no item %q", t.SaleID, t.ItemID)
		}
	}
	return out, reveals, nil
}

func fetchSale(ctx context.Context, client *http.Client, url string) (saleInfo, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return saleInfo{}, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return saleInfo{}, fmt.Errorf("target unreachable: %w", err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode != http.StatusOK {
		return saleInfo{}, fmt.Errorf("GET %s answered %s: give --stock and --limit for a target without the bundled sale page", url, resp.Status)
	}
	var info saleInfo
	if err := json.Unmarshal(body, &info); err != nil {
		return saleInfo{}, fmt.Errorf("GET %s: not a sale (%v): give --stock and --limit for a target without the bundled sale page", url, err)
	}
	return info, nil
}

// LimitsFromDB reads each target's stock (sql.item's quantity) and per-user limit
// (sql.perUserLimit, else limits.perUser) through the profile's queries, for a target without a
// sale page.
func LimitsFromDB(ctx context.Context, db *profile.DB, targets []loadgen.Target) (map[loadgen.Target]loadgen.ItemLimit, error) {
	out := map[loadgen.Target]loadgen.ItemLimit{}
	perUser := map[string]int{}
	for _, t := range targets {
		row, err := db.Item(ctx, t.SaleID, t.ItemID)
		if err != nil {
			return nil, fmt.Errorf("read the stock of %s through the profile's SQL: %w (or give --stock and --limit)", t, err)
		}
		lim, ok := perUser[t.SaleID]
		if !ok {
			if lim, err = db.PerUserLimit(ctx, t.SaleID); err != nil {
				return nil, fmt.Errorf("read the per-user limit of sale %s through the profile's SQL: %w (or give --stock and --limit)", t.SaleID, err)
			}
			perUser[t.SaleID] = lim
		}
		out[t] = loadgen.ItemLimit{Stock: row.Quantity, PerUser: lim}
	}
	return out, nil
}

// SkewURL is where skew.Measure reads the server's time: the sale page when the profile declares
// one (its serverTime), else the health path's answer (its Date header).
func SkewURL(prof *profile.Profile, base, sale string) string {
	if prof.HTTP.SalePage != "" {
		return prof.Endpoint(base, prof.HTTP.SalePage, sale)
	}
	return base + loadgen.HealthPath(prof, sale)
}

// Probe checks the target answers HTTP at all (any status) at base+path before buyers are prepared.
func Probe(ctx context.Context, client *http.Client, base, path string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+path, nil)
	if err != nil {
		return fmt.Errorf("target %q: %w", base, err)
	}
	resp, err := client.Do(req)
	if err != nil {
		return fmt.Errorf("target %s unreachable: %w", base, err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.Body.Close()
}
