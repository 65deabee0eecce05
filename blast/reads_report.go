package blast

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"time"

	"github.com/fsctl/fsctl/internal/platform/table"

	"github.com/fsctl/fsctl/loadgen"
)

// ReadSummary is the page traffic of a burst (--refreshes), apart from the purchases: the
// invariants never look at it, and its latency is its own distribution, so what the reads cost
// the write path shows in the purchases' numbers beside it.
type ReadSummary struct {
	// Refreshers is how many buyers refreshed, each Before times in the window before the release
	// and After times in the one after it.
	Refreshers int     `json:"refreshers"`
	Before     int     `json:"refreshesBefore"`
	After      int     `json:"refreshesAfter"`
	WindowMs   float64 `json:"windowMs"`
	Requests   int     `json:"requests"`
	// Statuses counts the answers by HTTP status ("200", "304", ...) and the loads that got none
	// by their outcome (TIMEOUT, TRANSPORT_ERROR).
	Statuses map[string]int `json:"statuses"`
	// ByStatus is each of them with its latency, in the order of the table.
	ByStatus []ReadRow `json:"byStatus"`
	// Latency is from each load's slot to its whole answer; Skew from its slot to when it was
	// written (late when the previous load of its buyer was slow or the pool was busy).
	Latency Dist `json:"latency"`
	Skew    Dist `json:"sendSkew"`
	// InFlightAtRelease counts the loads sent before the release and answered after it: the
	// reads the purchases met at the server.
	InFlightAtRelease int `json:"inFlightAtRelease"`
	// Conns is the reads' own pool (shared with the order polls), ConnsUsed how many carried one.
	Conns     int    `json:"conns"`
	ConnsUsed int    `json:"connsUsed"`
	Protocol  string `json:"protocol"`
}

// ReadRow is the page loads that got one status (or outcome), with their latency.
type ReadRow struct {
	Status  string `json:"status"`
	Count   int    `json:"count"`
	Latency Dist   `json:"latency"`
}

// PollSummary is the order polling after every RESERVED answer (--poll-order): how long each
// order took from the 202 to persisted in PostgreSQL, as the buyer saw it.
type PollSummary struct {
	IntervalMs float64 `json:"intervalMs"`
	WaitMs     float64 `json:"waitMs"`
	// Reserved counts the reservations polled; Persisted those a poll found persisted within the
	// wait, NotPersisted the rest, with what their last poll said in NotPersistedLast.
	Reserved         int            `json:"reserved"`
	Persisted        int            `json:"persisted"`
	NotPersisted     int            `json:"notPersisted"`
	NotPersistedLast map[string]int `json:"notPersistedLast,omitempty"`
	// Polls counts the GETs sent; TimeToPersisted is from the 202 to the answer that said persisted
	// (its resolution is the interval).
	Polls           int  `json:"polls"`
	TimeToPersisted Dist `json:"timeToPersisted"`
}

// summarizeReads is the report of the burst's page loads; nil when it had none.
func summarizeReads(res *loadgen.Result) *ReadSummary {
	rf := res.Refresh
	if rf == nil {
		return nil
	}
	s := &ReadSummary{Before: rf.Before, After: rf.After, WindowMs: millis(rf.Window), Requests: len(res.Reads),
		Statuses: map[string]int{}, Conns: res.ReadConns}
	lat, skew := newHist(), newHist()
	buyers, conns, protocols := map[int]bool{}, map[string]bool{}, map[string]int{}
	per := map[string]hist{}
	for _, r := range res.Reads {
		buyers[r.Buyer] = true
		lat.add(r.Latency())
		if d := r.Skew(); d >= 0 {
			skew.add(d)
		}
		st := string(r.Outcome)
		if r.Status != 0 {
			st = strconv.Itoa(r.Status)
		}
		s.Statuses[st]++
		if per[st].h == nil {
			per[st] = newHist()
		}
		per[st].add(r.Latency())
		if r.Started.Before(res.At) && r.Done.After(res.At) {
			s.InFlightAtRelease++
		}
		if r.Conn != "" {
			conns[r.Conn] = true
		}
		if p := r.Protocol(); p != "" {
			protocols[p]++
		}
	}
	s.Refreshers, s.ConnsUsed, s.Protocol = len(buyers), len(conns), protocolOf(protocols)
	s.Latency, s.Skew = lat.dist(), skew.dist()
	for _, st := range slices.Sorted(maps.Keys(s.Statuses)) {
		s.ByStatus = append(s.ByStatus, ReadRow{Status: st, Count: s.Statuses[st], Latency: per[st].dist()})
	}
	return s
}

// summarizePolls is the report of the order polling; nil when the burst had none.
func summarizePolls(res *loadgen.Result) *PollSummary {
	if res.Poll == nil {
		return nil
	}
	s := &PollSummary{IntervalMs: millis(res.Poll.Interval), WaitMs: millis(res.Poll.Wait), Reserved: len(res.Persisted)}
	h := newHist()
	for _, ps := range res.Persisted {
		s.Polls += ps.Polls
		if d, ok := ps.TimeToPersisted(); ok {
			s.Persisted++
			h.add(d)
			continue
		}
		s.NotPersisted++
		if s.NotPersistedLast == nil {
			s.NotPersistedLast = map[string]int{}
		}
		s.NotPersistedLast[ps.Last]++
	}
	s.TimeToPersisted = h.dist()
	return s
}

// renderReads writes the page reads' table and the polling line, after the purchases' report.
func (s Summary) renderReads(w io.Writer) error {
	if r := s.Reads; r != nil {
		fmt.Fprintf(w, "page reads (apart from the purchases above; latency from each load's slot): %d buyers refreshed %d times in the %s before the release",
			r.Refreshers, r.Before, time.Duration(r.WindowMs*float64(time.Millisecond)))
		if r.After > 0 {
			fmt.Fprintf(w, " and %d times in the %s after it", r.After, time.Duration(r.WindowMs*float64(time.Millisecond)))
		}
		fmt.Fprintln(w)
		t := latencyTable(w, "PAGE READ")
		for _, row := range r.ByStatus {
			if err := distRow(t, row.Status, row.Count, row.Latency); err != nil {
				return err
			}
		}
		if err := distRow(t, "all reads", r.Requests, r.Latency); err != nil {
			return err
		}
		if err := distRow(t, "purchases", s.Requests, s.Latency); err != nil {
			return err
		}
		if err := t.Render(); err != nil {
			return err
		}
		fmt.Fprintf(w, "reads: sent p50 %.1fms p99 %.1fms max %.1fms after their slot; %d in flight at the release; own pool of %d %s connections, %d used (the purchases' pool carries purchases only)\n",
			r.Skew.P50, r.Skew.P99, r.Skew.Max, r.InFlightAtRelease, r.Conns, r.Protocol, r.ConnsUsed)
	}
	if p := s.Polling; p != nil {
		fmt.Fprintf(w, "order polling (every %.0fms, up to %.0fms after the 202): %d of %d reservations persisted; 202 to persisted p50 %.1fms p99 %.1fms p99.9 %.1fms max %.1fms; %d polls",
			p.IntervalMs, p.WaitMs, p.Persisted, p.Reserved, p.TimeToPersisted.P50, p.TimeToPersisted.P99, p.TimeToPersisted.P999, p.TimeToPersisted.Max, p.Polls)
		if p.NotPersisted > 0 {
			fmt.Fprintf(w, "; NOT PERSISTED within the wait: %d (last answer: %v)", p.NotPersisted, p.NotPersistedLast)
		}
		fmt.Fprintln(w)
	}
	return nil
}

// distRow appends one latency row to a table with the report's latency columns.
func distRow(t *table.Table, name string, n int, d Dist) error {
	f := func(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) }
	return t.Append(name, strconv.Itoa(n), f(d.Min), f(d.Mean), f(d.P50), f(d.P90), f(d.P99), f(d.P999), f(d.P9999), f(d.Max))
}
