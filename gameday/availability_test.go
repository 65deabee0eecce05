package gameday

import (
	"strings"
	"testing"
	"time"

	"github.com/fsctl/fsctl/internal/contract/finding"
	"github.com/fsctl/fsctl/internal/contract/outcome"
	"github.com/fsctl/fsctl/loadgen"
)

// TestAvailabilityFromTheHistory: the verdict comes from every try. Buyer 0 is reserved, buyer 1
// sold out, buyer 2 fails twice and is then reserved on a retry, buyer 3 ends on a 503 and buyer 4
// on no answer at all: 2 of 5 undecided. Every try sent between +1.0 s and +1.3 s failed: that is
// the longest outage.
func TestAvailabilityFromTheHistory(t *testing.T) {
	t0 := time.Unix(1000, 0)
	try := func(buyer, attempt int, at time.Duration, status int, code outcome.Code) loadgen.Record {
		return loadgen.Record{Buyer: buyer, Click: 1, Attempt: attempt, Method: "POST", URL: "http://x/api/v1/sales/s/items/i/purchase",
			Started: t0.Add(at), Status: status, Outcome: code}
	}
	recs := []loadgen.Record{
		try(0, 1, 100*time.Millisecond, 202, outcome.Reserved),
		try(1, 1, 200*time.Millisecond, 410, outcome.SoldOut),
		try(2, 1, 1000*time.Millisecond, 503, outcome.Unavailable),
		try(3, 1, 1150*time.Millisecond, 503, outcome.PipelineDown),
		try(2, 2, 1250*time.Millisecond, 0, ""),
		try(2, 3, 1500*time.Millisecond, 202, outcome.Reserved),
		try(4, 1, 1600*time.Millisecond, 0, ""),
		{Buyer: 9, Method: "GET", URL: "http://x/api/v1/sales/s/room/ticket", Started: t0, Status: 500}, // not a purchase
	}
	a := measureAvailability(recs, t0)
	if a.Buyers != 5 || a.Undecided != 2 {
		t.Fatalf("buyers %d undecided %d, want 5 and 2", a.Buyers, a.Undecided)
	}
	if a.Outage != 300*time.Millisecond || a.OutageFrom != time.Second {
		t.Fatalf("longest outage %s from %s, want 300ms from 1s", a.Outage, a.OutageFrom)
	}
	if got := a.Answers[0]; got.Answer != "202 RESERVED" || got.Tries != 2 {
		t.Errorf("most frequent answer %+v, want 2 × 202 RESERVED (%+v)", got, a.Answers)
	}
	if !strings.Contains(a.String(), "1 503 ORDER_PIPELINE_UNAVAILABLE") || !strings.Contains(a.String(), "2 no answer") {
		t.Errorf("breakdown %q: want each status and code", a.String())
	}
	if f := checkAvailability(a, &Budget{Undecided: 0.5, Outage: time.Second}); f.Status != finding.Pass {
		t.Errorf("within budget: %+v", f)
	}
	if f := checkAvailability(a, &Budget{Undecided: 0.1, Outage: -1}); f.Status != finding.Fail || !strings.Contains(f.Detail, "40.0% of buyers without a definitive answer, budget 10.0%") {
		t.Errorf("over the undecided budget: %+v", f)
	}
	if f := checkAvailability(a, &Budget{Undecided: -1, Outage: 200 * time.Millisecond}); f.Status != finding.Fail || !strings.Contains(f.Detail, "an outage of 300ms from +1.0s, budget 200ms") {
		t.Errorf("over the outage budget: %+v", f)
	}
	if f := checkAvailability(a, nil); f.Status != finding.Pass || !strings.Contains(f.Detail, "sets no budget") {
		t.Errorf("no budget: %+v", f)
	}
}
