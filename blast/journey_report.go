package blast

import (
	"cmp"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/fsctl/fsctl/loadgen"
)

// RenderRoom prints how many clicks the room admitted and how long they waited for it.
func RenderRoom(w io.Writer, as []loadgen.Admission) error {
	var waits []time.Duration
	polls := 0
	for _, a := range as {
		polls += a.Polls
		if a.Admitted {
			waits = append(waits, a.Waited)
		}
	}
	slices.Sort(waits)
	line := fmt.Sprintf("waiting room: %d of %d clicks admitted, %d polls", len(waits), len(as), polls)
	if n := len(waits); n > 0 {
		at := func(q float64) string { return waits[min(n-1, int(q*float64(n)))].Round(time.Millisecond).String() }
		line += fmt.Sprintf("; admitted after (from the intended time) p50 %s p90 %s max %s", at(0.5), at(0.9), waits[n-1].Round(time.Millisecond))
	}
	_, err := fmt.Fprintln(w, line)
	return err
}

// FollowUpRow counts one (action, answer) pair.
type FollowUpRow struct {
	Action loadgen.Action `json:"action"`
	Answer string         `json:"answer"`
	Count  int            `json:"count"`
}

// TallyFollowUps counts the follow-ups by action and answer, in a stable order.
func TallyFollowUps(fs []loadgen.FollowUp) []FollowUpRow {
	counts := map[FollowUpRow]int{}
	for _, f := range fs {
		counts[FollowUpRow{Action: f.Action, Answer: f.Answer}]++
	}
	rows := make([]FollowUpRow, 0, len(counts))
	for r, n := range counts {
		r.Count = n
		rows = append(rows, r)
	}
	slices.SortFunc(rows, func(a, b FollowUpRow) int {
		return cmp.Or(cmp.Compare(a.Action, b.Action), cmp.Compare(a.Answer, b.Answer))
	})
	return rows
}

// RenderFollowUps prints what reserved buyers did after the purchase and what they were told.
func RenderFollowUps(w io.Writer, fs []loadgen.FollowUp) error {
	if len(fs) == 0 {
		_, err := fmt.Fprintln(w, "after the purchase: no reservation to follow up")
		return err
	}
	parts := []string{}
	for _, r := range TallyFollowUps(fs) {
		parts = append(parts, fmt.Sprintf("%s→%s %d", r.Action, r.Answer, r.Count))
	}
	_, err := fmt.Fprintf(w, "after the purchase (%d reservations): %s\n", len(fs), strings.Join(parts, ", "))
	return err
}
