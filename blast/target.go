package blast

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/fsctl/fsctl/profile"
)

// saleInfo is the part of GET /api/v1/sales/{sale} the invariant checks need.
type saleInfo struct {
	PerUserLimit int `json:"perUserLimit"`
	Items        []struct {
		ID       string `json:"id"`
		Quantity int64  `json:"quantity"`
	} `json:"items"`
}

// FetchLimits reads each target's stock and per-user limit from the sale page the profile
// declares (fsctl serve's) before the burst. An unreachable target or an item the sale does not
// have is an error, before anything is released.
func FetchLimits(ctx context.Context, client *http.Client, base string, prof *profile.Profile, targets []Target) (map[Target]ItemLimit, error) {
	if prof.HTTP.SalePage == "" {
		return nil, fmt.Errorf("profile %s declares no http.salePage: give --stock and --limit, or --postgres-url to read them with its SQL", prof.Name)
	}
	out := map[Target]ItemLimit{}
	pages := map[string]saleInfo{}
	for _, t := range targets {
		info, ok := pages[t.SaleID]
		if !ok {
			var err error
			if info, err = fetchSale(ctx, client, prof.Endpoint(base, prof.HTTP.SalePage, t.SaleID)); err != nil {
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

// HealthPath is what the probe and the warm-up GET: the profile's health path, else "/". Any
// status will do: only the connection matters.
func HealthPath(prof *profile.Profile, sale string) string {
	if prof.HTTP.Health != "" {
		return profile.Render(prof.HTTP.Health, profile.Vars{"sale": sale})
	}
	return "/"
}

// healthPath is HealthPath of the plan's profile and first sale.
func (p Plan) healthPath() string {
	var sale string
	if len(p.Targets) > 0 {
		sale = p.Targets[0].SaleID
	}
	return HealthPath(p.target(), sale)
}

// LimitsFromDB reads each target's stock (sql.item's quantity) and per-user limit
// (sql.perUserLimit, else limits.perUser) through the profile's queries, for a target without a
// sale page.
func LimitsFromDB(ctx context.Context, db *profile.DB, targets []Target) (map[Target]ItemLimit, error) {
	out := map[Target]ItemLimit{}
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
		out[t] = ItemLimit{Stock: row.Quantity, PerUser: lim}
	}
	return out, nil
}

// SkewURL is where the server's time is read: the sale page when the profile declares one (its
// serverTime), else the health path's answer (its Date header).
func SkewURL(prof *profile.Profile, base, sale string) string {
	if prof.HTTP.SalePage != "" {
		return prof.Endpoint(base, prof.HTTP.SalePage, sale)
	}
	return base + HealthPath(prof, sale)
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

// Skew is this machine's clock against the server's, measured once before the release.
type Skew struct {
	// Offset is local minus server time: positive when this machine runs ahead, so its buyers
	// would go early by the server's clock.
	Offset time.Duration
	// RTT is the round trip of the measuring request; the offset is uncertain by half of it.
	RTT time.Duration
	// Source says where the server's time came from: the sale page's serverTime or, at one
	// second's resolution, the Date header.
	Source string
}

// MeasureSkew reads the server's time from GET /api/v1/sales/{sale} (its serverTime, else the
// answer's Date header) and compares it with now at the middle of the round trip.
func MeasureSkew(ctx context.Context, client *http.Client, base, saleID string, now func() time.Time) (Skew, error) {
	return MeasureSkewAt(ctx, client, base+"/api/v1/sales/"+saleID, now)
}

// MeasureSkewAt is MeasureSkew from any URL whose answer carries a serverTime or a Date header.
func MeasureSkewAt(ctx context.Context, client *http.Client, url string, now func() time.Time) (Skew, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return Skew{}, err
	}
	sent := now()
	resp, err := client.Do(req)
	if err != nil {
		return Skew{}, fmt.Errorf("measure clock skew: %w", err)
	}
	got := now()
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	s := Skew{RTT: got.Sub(sent), Source: "serverTime"}
	local := sent.Add(s.RTT / 2)
	var page struct {
		ServerTime time.Time `json:"serverTime"`
	}
	if json.Unmarshal(body, &page) == nil && !page.ServerTime.IsZero() {
		s.Offset = local.Sub(page.ServerTime)
		return s, nil
	}
	date, err := http.ParseTime(resp.Header.Get("Date"))
	if err != nil {
		return Skew{}, fmt.Errorf("measure clock skew: GET %s gave neither a serverTime nor a Date header", url)
	}
	// Date is truncated to the second: its middle is the best guess.
	s.Offset, s.Source = local.Sub(date.Add(time.Second/2)), "Date header (±0.5s)"
	return s, nil
}

// Check refuses a skew beyond limit: with a shared --at, a machine whose clock is off releases
// its buyers early or late by that much, and the report would blame the server.
func (s Skew) Check(limit time.Duration) error {
	if s.Offset.Abs() <= limit {
		return nil
	}
	dir := "ahead of"
	if s.Offset < 0 {
		dir = "behind"
	}
	return fmt.Errorf("clock skew: this machine is %s %s the server (from its %s, round trip %s), over --max-skew %s: "+
		"sync the clock (NTP) or raise --max-skew", s.Offset.Abs().Round(time.Microsecond), dir, s.Source,
		s.RTT.Round(time.Microsecond), limit)
}

// String is the skew as the report prints it.
func (s Skew) String() string {
	return fmt.Sprintf("clock skew %+.1fms against the server (local minus server, from its %s, round trip %s)",
		float64(s.Offset)/float64(time.Millisecond), s.Source, s.RTT.Round(time.Microsecond))
}
