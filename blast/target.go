package blast

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
)

// saleInfo is the part of GET /api/v1/sales/{sale} the invariant checks need.
type saleInfo struct {
	PerUserLimit int `json:"perUserLimit"`
	Items        []struct {
		ID       string `json:"id"`
		Quantity int64  `json:"quantity"`
	} `json:"items"`
}

// FetchLimits reads each target's stock and per-user limit from the bundled server's sale page
// before the burst. It doubles as the reachability probe: an unreachable target or an item the
// sale does not have is an error, before anything is released.
func FetchLimits(ctx context.Context, client *http.Client, base string, targets []Target) (map[Target]ItemLimit, error) {
	out := map[Target]ItemLimit{}
	pages := map[string]saleInfo{}
	for _, t := range targets {
		info, ok := pages[t.SaleID]
		if !ok {
			var err error
			if info, err = fetchSale(ctx, client, base, t.SaleID); err != nil {
				return nil, err
			}
			pages[t.SaleID] = info
		}
		found := false
		for _, it := range info.Items {
			if it.ID == t.ItemID {
				out[t] = ItemLimit{Stock: it.Quantity, PerUser: info.PerUserLimit}
				found = true
			}
		}
		if !found {
			return nil, fmt.Errorf("sale %s has no item %q", t.SaleID, t.ItemID)
		}
	}
	return out, nil
}

func fetchSale(ctx context.Context, client *http.Client, base, saleID string) (saleInfo, error) {
	url := base + "/api/v1/sales/" + saleID
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

// Probe checks the target answers HTTP at all (any status) before buyers are prepared.
func Probe(ctx context.Context, client *http.Client, base string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/healthz", nil)
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
