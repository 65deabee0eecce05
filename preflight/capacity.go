package preflight

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"

	"github.com/fsctl/fsctl/internal/contract/finding"
)

// headroom is the share of the measured capacity an admission rate may use without a warning.
const headroom = 0.8

// checkCapacity: the waiting room admits buyers no faster than the checkout answered in the last
// measured burst (a `fsctl blast --output json` report).
func checkCapacity(_ context.Context, e *env) []finding.Finding {
	r := finding.Finding{Group: "capacity", Check: "admission rate"}
	if e.cfg.CapacityReport == "" {
		r.Status, r.Detail = finding.Skip, "no --capacity-report (a fsctl blast --output json report)"
		return []finding.Finding{r}
	}
	capacity, err := measuredCapacity(e.cfg.CapacityReport)
	if err != nil {
		r.Status, r.Detail, r.Fix = finding.Fail, err.Error(), "give the JSON report of fsctl blast --output json"
		return []finding.Finding{r}
	}
	sl := e.bundled.sale
	if sl == nil {
		r.Status, r.Detail = finding.Skip, "the sale is not in PostgreSQL"
		return []finding.Finding{r}
	}
	room := sl.Room
	if !room.Enabled {
		r.Status = finding.Warn
		r.Detail = fmt.Sprintf("no waiting room: nothing keeps arrivals below the measured %.0f req/s", capacity)
		r.Fix = "enable the sale's room with an admissionRate below that"
		return []finding.Finding{r}
	}
	r.Detail = fmt.Sprintf("admits %.0f buyers/s; the checkout answered %.0f req/s in %s", room.AdmissionRate, capacity, e.cfg.CapacityReport)
	switch {
	case room.AdmissionRate > capacity:
		r.Status, r.Fix = finding.Fail, fmt.Sprintf("lower room.admissionRate below %.0f (PUT /admin/v1/sales/%s/room)", capacity*headroom, e.cfg.SaleID)
	case room.AdmissionRate > capacity*headroom:
		r.Status, r.Fix = finding.Warn, fmt.Sprintf("less than %.0f%% headroom; an admitted buyer also polls and pays", (1-headroom)*100)
	default:
		r.Status = finding.Pass
	}
	return []finding.Finding{r}
}

// measuredCapacity reads the throughput of a blast JSON report.
func measuredCapacity(path string) (float64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, fmt.Errorf("capacity report: %w", err)
	}
	var rep struct {
		Throughput *float64 `json:"throughputRps"`
	}
	// The first JSON value: blast may print more after its summary.
	if err := json.NewDecoder(bytes.NewReader(b)).Decode(&rep); err != nil {
		return 0, fmt.Errorf("capacity report %s: %w", path, err)
	}
	if rep.Throughput == nil || *rep.Throughput <= 0 {
		return 0, fmt.Errorf("capacity report %s has no throughputRps: is it a fsctl blast --output json report?", path)
	}
	return *rep.Throughput, nil
}
