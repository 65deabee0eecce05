package gameday

import (
	"cmp"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/fsctl/fsctl/internal/contract/finding"
	"github.com/fsctl/fsctl/internal/contract/outcome"
	"github.com/fsctl/fsctl/internal/platform/durations"
	"github.com/fsctl/fsctl/loadgen"
)

// Availability is how the buyers fared while the faults ran, from every try the load generator
// recorded: a correct sale that turned most buyers away with errors did not pass.
type Availability struct {
	Buyers int `json:"buyers"`
	// Undecided counts the buyers whose last try got no definitive answer (202, 409
	// ALREADY_PURCHASED, 410 SOLD_OUT or SALE_ENDED): an error, a refusal to retry, no answer.
	Undecided int `json:"undecided"`
	// Answers counts every try by its status and code, most frequent first.
	Answers []AnswerCount `json:"answers"`
	// Outage is the longest stretch of tries, by when they were sent, none of which got a
	// definitive answer; OutageFrom is when it began, after the release. They are outageMs and
	// outageFromMs in JSON (deprecated: outage and outageFrom, nanoseconds).
	Outage     time.Duration `json:"outage"`
	OutageFrom time.Duration `json:"outageFrom"`
}

// MarshalJSON writes the availability with outageMs and outageFromMs (and the deprecated outage
// and outageFrom).
func (a Availability) MarshalJSON() ([]byte, error) {
	type plain Availability
	return durations.MarshalMs(plain(a), durations.Field("outage", &a.Outage), durations.Field("outageFrom", &a.OutageFrom))
}

// UnmarshalJSON reads an availability written with the <name>Ms fields, or before them.
func (a *Availability) UnmarshalJSON(b []byte) error {
	type plain Availability
	return durations.UnmarshalMs(b, (*plain)(a), durations.Field("outage", &a.Outage), durations.Field("outageFrom", &a.OutageFrom))
}

// AnswerCount is how many tries got one status and code ("503 UNAVAILABLE", "no answer").
type AnswerCount struct {
	Answer string `json:"answer"`
	Tries  int    `json:"tries"`
}

// outageBucket is the resolution of the longest outage.
const outageBucket = 100 * time.Millisecond

// definitive is an answer a buyer can stop at: reserved, or told there is nothing to have.
func definitive(r loadgen.Record) bool {
	switch {
	case r.Status == http.StatusAccepted && r.Outcome == outcome.Reserved:
		return true
	case r.Status == http.StatusConflict && r.Outcome == outcome.AlreadyPurchased:
		return true
	case r.Status == http.StatusGone && (r.Outcome == outcome.SoldOut || r.Outcome == outcome.SaleEnded):
		return true
	}
	return false
}

// answer names a try's answer for the breakdown.
func answer(r loadgen.Record) string {
	switch {
	case r.Status == 0:
		return "no answer"
	case r.Outcome != "":
		return fmt.Sprintf("%d %s", r.Status, r.Outcome)
	}
	return fmt.Sprintf("%d", r.Status)
}

// measureAvailability reads the purchase tries of records (the waiting room's polls are not
// purchases), released at release.
func measureAvailability(records []loadgen.Record, release time.Time) Availability {
	var a Availability
	last := map[int]loadgen.Record{} // each buyer's last try
	counts := map[string]int{}
	down := map[int]bool{} // bucket → every try in it failed so far
	for _, r := range records {
		if r.Method != http.MethodPost || !strings.HasSuffix(r.URL, "/purchase") {
			continue
		}
		counts[answer(r)]++
		if l, ok := last[r.Buyer]; !ok || r.Click > l.Click || r.Click == l.Click && r.Attempt > l.Attempt {
			last[r.Buyer] = r
		}
		sent := r.Started
		if sent.IsZero() {
			sent = r.Intended
		}
		b := int(sent.Sub(release) / outageBucket)
		ok := definitive(r)
		if was, seen := down[b]; !seen {
			down[b] = !ok
		} else {
			down[b] = was && !ok
		}
	}
	a.Buyers = len(last)
	for _, r := range last {
		if !definitive(r) {
			a.Undecided++
		}
	}
	for k, n := range counts {
		a.Answers = append(a.Answers, AnswerCount{Answer: k, Tries: n})
	}
	slices.SortFunc(a.Answers, func(x, y AnswerCount) int { return cmp.Or(y.Tries-x.Tries, strings.Compare(x.Answer, y.Answer)) })
	// The longest run of buckets that had tries and no definitive answer; a bucket without any try
	// neither ends nor extends a run.
	buckets := make([]int, 0, len(down))
	for b := range down {
		buckets = append(buckets, b)
	}
	slices.Sort(buckets)
	runFrom, inRun := 0, false
	for _, b := range buckets {
		if !down[b] {
			inRun = false
			continue
		}
		if !inRun {
			runFrom, inRun = b, true
		}
		if d := time.Duration(b-runFrom+1) * outageBucket; d > a.Outage {
			a.Outage, a.OutageFrom = d, time.Duration(runFrom)*outageBucket
		}
	}
	return a
}

// String sums it up: "12 of 2000 buyers (0.6%) without a definitive answer; longest outage 1.2s
// from +4.0s; tries: 1402 202 RESERVED, ...".
func (a Availability) String() string {
	var parts []string
	for _, c := range a.Answers {
		parts = append(parts, fmt.Sprintf("%d %s", c.Tries, c.Answer))
	}
	outage := "none"
	if a.Outage > 0 {
		outage = fmt.Sprintf("%s from +%.1fs", a.Outage, a.OutageFrom.Seconds())
	}
	return fmt.Sprintf("%d of %d buyers (%.1f%%) without a definitive answer; longest outage %s; tries: %s",
		a.Undecided, a.Buyers, a.Share()*100, outage, strings.Join(parts, ", "))
}

// Share is the part of the buyers whose last try got no definitive answer.
func (a Availability) Share() float64 {
	if a.Buyers == 0 {
		return 0
	}
	return float64(a.Undecided) / float64(a.Buyers)
}

// availabilityCheck names the availability verdict: a budget missed, not an invariant broken.
const availabilityCheck = "availability within the budget"

// checkAvailability judges a against the scenario's budget (nil: measured, not judged).
func checkAvailability(a Availability, b *Budget) finding.Finding {
	if b == nil {
		return check("availability", true, a.String()+" (the scenario sets no budget)")
	}
	var over []string
	if b.Undecided >= 0 && a.Share() > b.Undecided {
		over = append(over, fmt.Sprintf("%.1f%% of buyers without a definitive answer, budget %.1f%%", a.Share()*100, b.Undecided*100))
	}
	if b.Outage >= 0 && a.Outage > b.Outage {
		over = append(over, fmt.Sprintf("an outage of %s from +%.1fs, budget %s", a.Outage, a.OutageFrom.Seconds(), b.Outage))
	}
	if len(over) > 0 {
		return check(availabilityCheck, false, strings.Join(over, "; ")+"; "+a.String())
	}
	return check(availabilityCheck, true, a.String())
}
