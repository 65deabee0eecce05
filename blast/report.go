package blast

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
	"github.com/olekukonko/tablewriter"
	"github.com/olekukonko/tablewriter/tw"

	"github.com/fsctl/fsctl/internal/contract/finding"
	"github.com/fsctl/fsctl/internal/contract/outcome"
	"github.com/fsctl/fsctl/internal/platform/table"
	"github.com/fsctl/fsctl/loadgen"
)

// Dist is a latency distribution in milliseconds, from an HDR histogram (3 significant digits):
// the far tail (p99.9, p99.99) is where a burst's unlucky buyers are.
type Dist struct {
	Min   float64 `json:"minMs"`
	Mean  float64 `json:"meanMs"`
	P50   float64 `json:"p50Ms"`
	P90   float64 `json:"p90Ms"`
	P99   float64 `json:"p99Ms"`
	P999  float64 `json:"p999Ms"`
	P9999 float64 `json:"p9999Ms"`
	Max   float64 `json:"maxMs"`
}

// OutcomeRow is one outcome's count and latency from the intended release.
type OutcomeRow struct {
	Outcome outcome.Code `json:"outcome"`
	Count   int          `json:"count"`
	Latency Dist         `json:"latency"`
}

// Summary is the report of a burst, printed as tables or JSON.
type Summary struct {
	// Profile names the target profile the burst was fired through.
	Profile string `json:"profile,omitempty"`
	// Engine sent the requests, http or raw; EngineAuto says auto picked it, and EngineFallback,
	// when auto picked http, why the raw engine could not run the burst.
	Engine         string `json:"engine"`
	EngineAuto     bool   `json:"engineAuto"`
	EngineFallback string `json:"engineFallback,omitempty"`
	// TimeoutMs bounded each request; TimeoutAuto says it was sized to the burst (AutoTimeout).
	TimeoutMs   float64 `json:"timeoutMs"`
	TimeoutAuto bool    `json:"timeoutAuto"`
	// HTTP is the HTTP version asked for (--http), "" for auto; Protocol is what the requests
	// really went over (h2, h2c, HTTP/1.1, HTTP/1.1 over TLS; several, with counts, when mixed).
	HTTP     string    `json:"http,omitempty"`
	At       time.Time `json:"at"`
	Buyers   int       `json:"buyers"`
	Requests int       `json:"requests"`
	// Sold counts distinct reservations (retries of one key count once).
	Sold     int          `json:"sold"`
	Outcomes []OutcomeRow `json:"outcomes"`
	Latency  Dist         `json:"latency"`
	// Throughput is requests per second from the intended release to the last answer.
	Throughput float64 `json:"throughputRps"`
	DurationMs float64 `json:"durationMs"`
	PreparedMs float64 `json:"preparedMs"`
	// ReleaseLateMs is how late the barrier opened. Wake is when each first attempt's goroutine
	// ran after the intended instant (the barrier's own skew); Skew is when its request was
	// written, which adds the wait for a free connection of the pool.
	ReleaseLateMs float64 `json:"releaseLateMs"`
	// CPU is what this process (the generator) spent; nil for a merged report.
	CPU  *CPUUse `json:"cpu,omitempty"`
	Wake Dist    `json:"wakeSkew"`
	Skew Dist    `json:"releaseSkew"`
	// SoldOutMs is the first SOLD_OUT answer after the last RESERVED one, from the release.
	SoldOutMs *float64 `json:"timeToSoldOutMs,omitempty"`
	// Fairness is, per item, how well the order of release predicts who won.
	Fairness    []FairnessRow     `json:"fairness"`
	Protocol    string            `json:"protocol"`
	Conns       int               `json:"conns"`
	ConnsUsed   int               `json:"connsUsed"`
	PerConnMax  int               `json:"requestsPerConnMax"`
	PerConnMean float64           `json:"requestsPerConnMean"`
	Verdicts    []finding.Finding `json:"verdicts"`
	// Failures are the thresholds the run missed.
	Failures []string `json:"thresholdFailures,omitempty"`
	// Reads is the page traffic beside the purchases (--refreshes) and Polling the order polling
	// after each 202 (--poll-order); nil when the burst had none. Latency, Outcomes and the
	// verdicts are the purchases' alone.
	Reads   *ReadSummary `json:"reads,omitempty"`
	Polling *PollSummary `json:"orderPolling,omitempty"`
	// Metrics is how the pushes to the remote-write receiver went; nil when the burst had none.
	Metrics *MetricsExport `json:"metricsRemoteWrite,omitempty"`
}

type hist struct{ h *hdrhistogram.Histogram }

func newHist() hist { return hist{hdrhistogram.New(1, int64(time.Hour/time.Microsecond), 3)} }

func (h hist) add(d time.Duration) { _ = h.h.RecordValue(max(1, d.Microseconds())) }

func (h hist) dist() Dist {
	if h.h.TotalCount() == 0 {
		return Dist{}
	}
	ms := func(us int64) float64 { return float64(us) / 1000 }
	q := func(p float64) float64 { return ms(h.h.ValueAtQuantile(p)) }
	return Dist{Min: ms(h.h.Min()), Mean: h.h.Mean() / 1000, P50: q(50), P90: q(90), P99: q(99),
		P999: q(99.9), P9999: q(99.99), Max: ms(h.h.Max())}
}

// CPUUse is the generator's own CPU time, user and system, before the release and from it to
// the last answer, and the latter per request: what a burst took from a machine it shares.
type CPUUse struct {
	PrepareMs     float64 `json:"prepareMs"`
	BurstMs       float64 `json:"burstMs"`
	BurstUsPerReq float64 `json:"burstUsPerRequest"`
}

// cpuUse is res's CPU, nil when unknown (a merge of shards' files).
func cpuUse(res *loadgen.Result) *CPUUse {
	if res.BurstCPU <= 0 || len(res.Records) == 0 {
		return nil
	}
	return &CPUUse{PrepareMs: millis(res.PrepareCPU), BurstMs: millis(res.BurstCPU),
		BurstUsPerReq: float64(res.BurstCPU.Nanoseconds()) / 1000 / float64(len(res.Records))}
}

func millis(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// Summarize builds the report of a burst and its verdicts.
func Summarize(res *loadgen.Result, verdicts []finding.Finding) Summary {
	s := Summary{At: res.At, Buyers: res.Buyers, Requests: len(res.Records), Conns: res.Conns, Verdicts: verdicts,
		PreparedMs: millis(res.Prepared), ReleaseLateMs: millis(res.Released.Sub(res.At)), CPU: cpuUse(res),
		Engine: res.Resolved.Engine, EngineAuto: res.Resolved.EngineAuto, EngineFallback: res.Resolved.Fallback,
		TimeoutMs: millis(res.Resolved.Timeout), TimeoutAuto: res.Resolved.TimeoutAuto, HTTP: res.Resolved.HTTP}
	t := tallyRecords(res.Records)
	if soldOut := soldOutAt(res.Records, t.grants); !soldOut.IsZero() {
		v := millis(soldOut.Sub(res.At))
		s.SoldOutMs = &v
	}
	s.Sold = len(t.grants)
	s.Fairness = Fairness(res.Records)
	s.Latency, s.Skew, s.Wake = t.all.dist(), t.skew.dist(), t.wake.dist()
	if d := t.last.Sub(res.At); d > 0 {
		s.DurationMs = millis(d)
		s.Throughput = float64(len(res.Records)) / d.Seconds()
	}
	for _, c := range loadgen.Outcomes() {
		if t.counts[c] > 0 {
			s.Outcomes = append(s.Outcomes, OutcomeRow{Outcome: c, Count: t.counts[c], Latency: t.per[c].dist()})
			delete(t.counts, c)
		}
	}
	for c, n := range t.counts { // an outcome a custom journey invented: still reported
		s.Outcomes = append(s.Outcomes, OutcomeRow{Outcome: c, Count: n, Latency: t.per[c].dist()})
	}
	s.Protocol = protocolOf(t.protocols)
	s.Reads, s.Polling = summarizeReads(res), summarizePolls(res)
	s.ConnsUsed = len(t.conns)
	for _, n := range t.conns {
		s.PerConnMax = max(s.PerConnMax, n)
	}
	if len(t.conns) > 0 {
		s.PerConnMean = float64(len(res.Records)) / float64(len(t.conns))
	}
	return s
}

// tally is what one pass over a burst's records gathers for its summary.
type tally struct {
	all, skew, wake hist
	per             map[outcome.Code]hist
	counts          map[outcome.Code]int
	conns           map[string]int
	protocols       map[string]int
	// grants maps each reservation to its first answer: replays of it must not move the sell-out.
	grants map[string]time.Time
	last   time.Time // the last answer
}

// tallyRecords makes the one pass over the records: latencies, outcomes, connections, protocols
// and the reservations granted.
func tallyRecords(records []loadgen.Record) tally {
	t := tally{all: newHist(), skew: newHist(), wake: newHist(), per: map[outcome.Code]hist{},
		counts: map[outcome.Code]int{}, conns: map[string]int{}, protocols: map[string]int{}, grants: map[string]time.Time{}}
	for _, r := range records {
		t.all.add(r.Latency())
		if r.Attempt == 1 {
			t.wake.add(r.Started.Sub(r.Intended))
			if d := r.Skew(); d >= 0 {
				t.skew.add(d)
			}
		}
		if t.per[r.Outcome].h == nil {
			t.per[r.Outcome] = newHist()
		}
		t.per[r.Outcome].add(r.Latency())
		t.counts[r.Outcome]++
		if r.Conn != "" {
			t.conns[r.Conn]++
		}
		if p := r.Protocol(); p != "" {
			t.protocols[p]++
		}
		if r.Done.After(t.last) {
			t.last = r.Done
		}
		if r.Outcome == outcome.Reserved {
			if g, ok := t.grants[grant(r)]; !ok || r.Done.Before(g) {
				t.grants[grant(r)] = r.Done
			}
		}
	}
	return t
}

// soldOutAt is when the sale was first answered sold out once its last reservation was granted;
// zero when it never was.
func soldOutAt(records []loadgen.Record, grants map[string]time.Time) time.Time {
	var lastReserved, soldOut time.Time
	for _, done := range grants {
		if done.After(lastReserved) {
			lastReserved = done
		}
	}
	for _, r := range records {
		if r.Outcome == outcome.SoldOut && !r.Done.Before(lastReserved) && (soldOut.IsZero() || r.Done.Before(soldOut)) {
			soldOut = r.Done
		}
	}
	return soldOut
}

// protocolOf names what the answered requests went over: one protocol, or each with its count
// when they differ (an auto run against servers that do not all offer h2).
func protocolOf(counts map[string]int) string {
	if len(counts) == 1 {
		for p := range counts {
			return p
		}
	}
	names := slices.Sorted(maps.Keys(counts))
	for i, p := range names {
		names[i] = fmt.Sprintf("%s (%d)", p, counts[p])
	}
	return strings.Join(names, ", ")
}

// Thresholds fail a run that works but is not good enough.
type Thresholds struct {
	// MaxP99 is the slowest p99 latency (from the intended release) allowed; 0 = none.
	MaxP99 time.Duration
	// MinThroughput in requests per second; 0 = none.
	MinThroughput float64
	// ExpectSold is the exact number of reservations expected; negative = none.
	ExpectSold int
}

// Check records in s.Failures every threshold the run missed and reports whether any was.
func (s *Summary) Check(t Thresholds) bool {
	if t.MaxP99 > 0 && s.Latency.P99 > millis(t.MaxP99) {
		s.Failures = append(s.Failures, fmt.Sprintf("p99 latency %.1fms is above --max-p99 %s", s.Latency.P99, t.MaxP99))
	}
	if t.MinThroughput > 0 && s.Throughput < t.MinThroughput {
		s.Failures = append(s.Failures, fmt.Sprintf("throughput %.0f req/s is below --min-throughput %.0f", s.Throughput, t.MinThroughput))
	}
	if t.ExpectSold >= 0 && s.Sold != t.ExpectSold {
		s.Failures = append(s.Failures, fmt.Sprintf("%d units sold, --expect-sold %d", s.Sold, t.ExpectSold))
	}
	return len(s.Failures) > 0
}

// WriteJSON writes the summary for machines.
func (s Summary) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(s)
}

// latencyTable is a table of latency distributions, one row each, first naming the row. Headers
// as written: the automatic format would split "P99.9" into "P 99 . 9". On a narrow terminal the
// tails past p99, then the min and mean, then p90 are left out (package table): p50, p99 and max
// tell the story of a burst.
func latencyTable(w io.Writer, name string) *table.Table {
	return table.New(w, name, "REQUESTS", "MIN MS", "MEAN MS", "P50 MS", "P90 MS", "P99 MS", "P99.9 MS", "P99.99 MS", "MAX MS").
		With(tablewriter.WithHeaderAutoFormat(tw.Off)).
		Drop("P99.99 MS", "P99.9 MS", "MIN MS", "MEAN MS", "P90 MS")
}

// Render writes the summary as tables for people.
func (s Summary) Render(w io.Writer) error {
	f := func(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) }
	if s.Profile != "" {
		fmt.Fprintf(w, "target: %s\n", s.Profile)
	}
	if s.Engine != "" {
		fmt.Fprintln(w, s.Settings())
	}
	if s.Reads != nil {
		fmt.Fprintln(w, "purchases (writes; the page reads have their own table below):")
	}
	t := latencyTable(w, "OUTCOME")
	row := func(name string, n int, d Dist) error {
		return t.Append(name, strconv.Itoa(n), f(d.Min), f(d.Mean), f(d.P50), f(d.P90), f(d.P99), f(d.P999), f(d.P9999), f(d.Max))
	}
	for _, o := range s.Outcomes {
		if err := row(string(o.Outcome), o.Count, o.Latency); err != nil {
			return err
		}
	}
	if err := row("all", s.Requests, s.Latency); err != nil {
		return err
	}
	if err := t.Render(); err != nil {
		return err
	}
	fmt.Fprintf(w, "buyers %d, requests %d, sold %d; %.0f req/s over %.1fms from the release (latency counts from the intended instant)\n",
		s.Buyers, s.Requests, s.Sold, s.Throughput, s.DurationMs)
	fmt.Fprintf(w, "release: barrier opened %.3fms late (prepared in %.0fms); buyers woke p50 %.1fms p99 %.1fms max %.1fms after it\n",
		s.ReleaseLateMs, s.PreparedMs, s.Wake.P50, s.Wake.P99, s.Wake.Max)
	if c := s.CPU; c != nil {
		fmt.Fprintf(w, "generator CPU (this process): %.0fms preparing, %.0fms from the release (%.1fµs a request)\n",
			c.PrepareMs, c.BurstMs, c.BurstUsPerReq)
	}
	fmt.Fprintf(w, "written - intended (includes the wait for a pooled connection): p50 %.1fms p99 %.1fms max %.1fms\n",
		s.Skew.P50, s.Skew.P99, s.Skew.Max)
	if s.SoldOutMs != nil {
		fmt.Fprintf(w, "sold out: first SOLD_OUT after the last RESERVED at %.1fms\n", *s.SoldOutMs)
	}
	if len(s.Fairness) > 0 {
		fmt.Fprintln(w, FairnessNote)
	}
	for _, f := range s.Fairness {
		fmt.Fprintf(w, "  %s: %d of the first %d clicks by %s time won (%.2f; %d clicks), rho %s (max %s)\n",
			f.Target, f.FirstKWon, f.Won, f.OrderBy, f.FirstKShare, f.Clicks, rho(f.Spearman), rho(f.SpearmanMax))
	}
	fmt.Fprintf(w, "connections: pool of %d %s connections, %d used, %.1f requests per connection (max %d) - not one socket per buyer\n",
		s.Conns, s.Protocol, s.ConnsUsed, s.PerConnMean, s.PerConnMax)
	if err := s.renderReads(w); err != nil {
		return err
	}
	if s.Metrics != nil {
		fmt.Fprintln(w, s.Metrics)
	}
	if err := finding.Invariants(w, s.Verdicts); err != nil {
		return err
	}
	for _, msg := range s.Failures {
		fmt.Fprintf(w, "threshold FAILED  %s\n", msg)
	}
	return nil
}

// Settings says which engine and request timeout produced the numbers, and why when auto chose.
func (s Summary) Settings() string {
	return loadgen.Resolution{Engine: s.Engine, EngineAuto: s.EngineAuto, Fallback: s.EngineFallback,
		Timeout: time.Duration(s.TimeoutMs * float64(time.Millisecond)), TimeoutAuto: s.TimeoutAuto, HTTP: s.HTTP}.String()
}

// rho prints a Spearman correlation, or why there is none.
func rho(r *float64) string {
	if r == nil {
		return "n/a (everyone or no one won)"
	}
	return strconv.FormatFloat(*r, 'f', 2, 64)
}
