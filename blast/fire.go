// Package blast is fsctl blast's judgement and presentation around the load generator (package
// loadgen): the burst command's workflow (Fire: probe, limits, clock skew, the run, the state
// check, thresholds, files), the answer invariants (check.go) and the state check
// (check_state.go), the report, its thresholds and HTML, fairness, merging the records of a
// sharded burst, and pushing a burst's metrics to a Prometheus remote-write receiver while it
// runs (export.go).
package blast

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/fsctl/fsctl/internal/contract/finding"
	"github.com/fsctl/fsctl/internal/platform/skew"
	"github.com/fsctl/fsctl/internal/target/profile"
	"github.com/fsctl/fsctl/loadgen"
)

// Burst is one run of fsctl blast: a ready plan (its Profile, Minter and Classifier set) and what
// to do around it.
type Burst struct {
	Plan loadgen.Plan
	// Limits are each item's stock and per-user limit; nil reads them from the target: its sale
	// page, else its SQL through PostgresURL.
	Limits map[loadgen.Target]loadgen.ItemLimit
	// RedisURL and PostgresURL reach the target's stores for CheckState (and the limits).
	RedisURL, PostgresURL string
	// CheckState also checks the target's Redis and PostgreSQL, waiting up to Settle.
	CheckState bool
	Settle     time.Duration
	// MaxSkew refuses to run when this machine's clock is further than this from the
	// server's; 0 does not check.
	MaxSkew    time.Duration
	Thresholds Thresholds
	// Results (vegeta), Records (JSON lines, for merge) and HTML are files to write; "" is none.
	Results, Records, HTML string
	// Metrics, when its URL is set, pushes the burst's counts to a remote-write receiver while
	// it runs.
	Metrics RemoteWrite
	// Reveal is whether buyers fetch a revealed purchase path first: RevealAuto ("" too) when
	// fsctl serve's sale page says so, RevealOn (the plan's journey already does), RevealOff.
	Reveal string
}

// Report is what a burst ended with: its summary, with verdicts and missed thresholds, and what
// the summary has no place for (the waiting room's admissions, what buyers did after buying).
type Report struct {
	Summary    Summary
	room       *loadgen.Room
	reveal     *loadgen.Reveal
	followUps  []loadgen.FollowUp
	followedUp bool
}

// Broken reports whether an invariant was broken.
func (r Report) Broken() bool { return !finding.OK(r.Summary.Verdicts, false) }

// Missed reports whether a threshold was missed.
func (r Report) Missed() bool { return len(r.Summary.Failures) > 0 }

// RenderJourney prints the waiting room's admissions and what buyers did after the purchase,
// for the journeys the burst had.
func (r Report) RenderJourney(w io.Writer) error {
	if r.room != nil {
		if err := RenderRoom(w, r.room.Admissions()); err != nil {
			return err
		}
	}
	if r.reveal != nil {
		if err := RenderReveal(w, r.reveal.Counts()); err != nil {
			return err
		}
	}
	if r.followedUp {
		return RenderFollowUps(w, r.followUps)
	}
	return nil
}

// Fire runs the burst: it probes the target, reads the limits it was not given, compares the
// clocks, releases the buyers (progress on progress), writes the files, checks the answers (and
// the target's state) and the thresholds.
func Fire(ctx context.Context, b Burst, progress io.Writer) (Report, error) {
	// Buyers are prepared on every CPU and the burst's ticker starts at the release instant, so
	// both may write progress at once when preparing runs late (slow RS256 signatures).
	progress = &lockedWriter{w: progress}
	p, prof := b.Plan, b.Plan.Profile
	sale := p.Targets[0].SaleID
	exp, err := newExporter(b.Metrics, p, progress)
	if err != nil {
		return Report{}, err
	}
	// The probe speaks like the buyers (TLS settings, HTTP version), so a certificate or protocol
	// the target refuses stops the run here, with the flag that fixes it.
	probe := p.NewClient(1, 5*time.Second)
	defer probe.CloseIdleConnections()
	if err := Probe(ctx, probe, p.BaseURL, loadgen.HealthPath(prof, sale)); err != nil {
		return Report{}, explainProbe(ctx, p, loadgen.HealthPath(prof, sale), err)
	}
	limits := b.Limits
	var reveals []string
	if limits == nil {
		var err error
		if limits, reveals, err = b.fetchLimits(ctx, probe); err != nil {
			return Report{}, err
		}
	}
	if p, err = b.followReveal(reveals, progress); err != nil {
		return Report{}, err
	}
	b.Plan = p
	if b.MaxSkew > 0 {
		clock, err := skew.Measure(ctx, probe, SkewURL(prof, p.BaseURL, sale), time.Now)
		if err != nil {
			return Report{}, err
		}
		fmt.Fprintln(progress, clock)
		if err := clock.Check(b.MaxSkew); err != nil {
			return Report{}, err
		}
	}
	defer bigBurstGC(p)() // through the report, which holds the records and builds its own
	res, err := run(ctx, p, progress, exp)
	if err != nil {
		return Report{}, err
	}
	warnRefused(progress, p, b.Reveal, res.Records)
	if err := b.writeRequestFiles(res, limits); err != nil {
		return Report{}, err
	}
	verdicts := CheckResponses(res.Records, limits)
	if b.CheckState {
		state, err := b.checkState(ctx, limits, res.Records)
		if err != nil {
			return Report{}, err
		}
		verdicts = append(verdicts, state...)
	}
	sum := Summarize(res, verdicts)
	sum.Profile = profileLabel(prof)
	sum.Metrics = exp.report()
	sum.Check(b.Thresholds)
	if b.HTML != "" {
		if err := SaveHTML(b.HTML, sum, res.Records); err != nil {
			return Report{}, err
		}
	}
	rep := Report{Summary: sum, followUps: res.FollowUps, followedUp: p.After != nil}
	rep.room, _ = p.Journey.(*loadgen.Room)
	rep.reveal = p.RevealJourney()
	return rep, nil
}

// bigBurstClicks is where a burst's prepared clicks outweigh everything else the process holds.
const bigBurstClicks = 100_000

// bigBurstGC lets a burst of bigBurstClicks or more in this process run with half Go's default
// heap headroom (GOGC 50 instead of 100), unless GOGC says otherwise, and returns what restores
// it. The prepared buyers live until the end, and the default grows the heap by as much again:
// with it 500,000 buyers peaked at 1.03 GB (2.1 KB a buyer), at 50 at 0.83 GB, for about a
// second more of the collector's CPU (2-core box, raw engine, trivial endpoint).
func bigBurstGC(p loadgen.Plan) func() {
	shards := max(1, p.Shard.Count)
	if os.Getenv("GOGC") != "" || p.Buyers/shards*max(1, p.Clicks) < bigBurstClicks {
		return func() {}
	}
	old := debug.SetGCPercent(50)
	return func() { debug.SetGCPercent(old) }
}

// run releases the plan's buyers, showing the preparation and the burst as they go (and
// exporting them when exp is set), and warns when the release opened late.
func run(ctx context.Context, p loadgen.Plan, progress io.Writer, exp *exporter) (*loadgen.Result, error) {
	p.Progress = func(done, total int) {
		fmt.Fprintf(progress, "preparing buyers: %d/%d (%d%%)\n", done, total, done*100/total)
	}
	fmt.Fprintln(progress, p.Resolve())
	if rf := p.Refresh; rf != nil {
		fmt.Fprintf(progress, "page reads: %.0f%% of the buyers refresh the sale page %d times in the %s before the release and %d after it, over their own pool of %d connections\n",
			rf.Share*100, rf.Before, rf.Window, rf.After, cmp.Or(p.ReadConns, loadgen.DefaultReadConns))
	}
	fmt.Fprintf(progress, "release at %s (in %s)\n", p.At.Format(time.RFC3339Nano), time.Until(p.At).Round(time.Millisecond))
	p.Answered = new(atomic.Int64)
	stop := showBurstProgress(progress, p.At, p.Answered)
	var res *loadgen.Result
	var err error
	if exp != nil {
		res, err = exp.run(ctx, p)
	} else {
		res, err = loadgen.Run(ctx, p)
	}
	stop()
	if err != nil {
		return nil, err
	}
	if late := lateReads(res); late > 100*time.Millisecond {
		fmt.Fprintf(progress, "warning: page loads went out up to %s after their slot (a buyer's previous load still unanswered, or this process busy "+
			"with the burst); their latency counts from the slot, so it includes that wait\n", late.Round(time.Millisecond))
	}
	if late := res.Released.Sub(res.At); late > 100*time.Millisecond {
		fmt.Fprintf(progress, "warning: the release opened %s late: preparing the buyers took %s; give --in (or --at) more time, "+
			"or mint the tokens ahead with `fsctl profile tokens` (an RS256 token costs about a millisecond)\n",
			late.Round(time.Millisecond), res.Prepared.Round(time.Millisecond))
	}
	return res, nil
}

// lateReads is how long after its slot the latest page load was written.
func lateReads(res *loadgen.Result) time.Duration {
	var late time.Duration
	for _, r := range res.Reads {
		late = max(late, r.Skew())
	}
	return late
}

// explainProbe adds to a failed probe the TLS flag that fixes it. Over HTTP/2 a TLS alert from
// the target (a client certificate refused) is lost in "client conn could not be established",
// so the probe is tried once more over HTTP/1.1, which reports it.
func explainProbe(ctx context.Context, p loadgen.Plan, path string, err error) error {
	hint := loadgen.TLSHint(err)
	if hint == "" && p.HTTP != loadgen.HTTP1 && strings.HasPrefix(p.BaseURL, "https://") {
		p.HTTP = loadgen.HTTP1
		again := p.NewClient(1, 5*time.Second)
		defer again.CloseIdleConnections()
		if err1 := Probe(ctx, again, p.BaseURL, path); err1 != nil {
			if hint = loadgen.TLSHint(err1); hint != "" {
				err = err1
			}
		}
	}
	if hint == "" {
		return err
	}
	return fmt.Errorf("%w: %s", err, hint)
}

// profileLabel names the target in the report: the profile's name and where it came from.
func profileLabel(prof *profile.Profile) string {
	if prof.Source() == "" {
		return prof.Name
	}
	return prof.Name + " (" + prof.Source() + ")"
}

// fetchLimits reads the stock and per-user limit the burst was not given: from the profile's
// sale page when it has one, else through its SQL.
// From the sale page it also names the sales whose page says they reveal their purchase path.
func (b Burst) fetchLimits(ctx context.Context, client *http.Client) (map[loadgen.Target]loadgen.ItemLimit, []string, error) {
	p := b.Plan
	if p.Profile.HTTP.SalePage != "" {
		return fetchPages(ctx, client, p.BaseURL, p.Profile, p.Targets)
	}
	pool, err := pgxpool.New(ctx, b.PostgresURL)
	if err != nil {
		return nil, nil, fmt.Errorf("postgres url (to read the stock and limit with profile %s's SQL; or give --stock and --limit): %w", p.Profile.Name, err)
	}
	defer pool.Close()
	limits, err := LimitsFromDB(ctx, profile.NewDB(p.Profile, pool), p.Targets)
	return limits, nil, err
}

// checkState compares the target's Redis and PostgreSQL with what buyers were told, through its
// profile, sale by sale.
func (b Burst) checkState(ctx context.Context, limits map[loadgen.Target]loadgen.ItemLimit, recs []loadgen.Record) ([]finding.Finding, error) {
	prof := b.Plan.Profile
	t, err := profile.Connect(ctx, prof, b.RedisURL, b.PostgresURL)
	if err != nil {
		return nil, err
	}
	defer t.Close()
	var sales []string
	for _, tg := range burstTargets(recs, limits) {
		if !slices.Contains(sales, tg.SaleID) {
			sales = append(sales, tg.SaleID)
		}
	}
	var out []finding.Finding
	for _, sale := range sales {
		vs, err := CheckState(ctx, t, sale, recs, limits, b.Settle)
		if err != nil {
			return nil, fmt.Errorf("check sale %s through profile %s: %w", sale, prof.Name, err)
		}
		out = append(out, vs...)
	}
	return out, nil
}

// burstTargets are the items of the burst: those the records name, then those of the limits.
func burstTargets(recs []loadgen.Record, limits map[loadgen.Target]loadgen.ItemLimit) []loadgen.Target {
	var out []loadgen.Target
	for _, r := range recs {
		if !slices.Contains(out, r.Target) {
			out = append(out, r.Target)
		}
	}
	for tg := range limits {
		if !slices.Contains(out, tg) {
			out = append(out, tg)
		}
	}
	return out
}

// writeRequestFiles writes the per-request files the burst was asked for: vegeta results and the
// full records that merge reads.
func (b Burst) writeRequestFiles(res *loadgen.Result, limits map[loadgen.Target]loadgen.ItemLimit) error {
	if b.Results != "" {
		if err := writeFile(b.Results, func(f *os.File) error { return loadgen.WriteResults(f, res.Records) }); err != nil {
			return err
		}
	}
	if b.Records != "" {
		h := loadgen.HeaderOf(b.Plan, res, limits)
		if err := writeFile(b.Records, func(f *os.File) error { return loadgen.WriteRecords(f, h, res.Records) }); err != nil {
			return err
		}
	}
	return nil
}

// SaveHTML writes the HTML report of a burst to path; fsctl blast merge's --html calls it too.
func SaveHTML(path string, sum Summary, recs []loadgen.Record) error {
	return writeFile(path, func(f *os.File) error { return WriteHTML(f, sum, recs) })
}

// writeFile creates path and fills it with write, reporting the first error of either.
func writeFile(path string, write func(*os.File) error) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := write(f); err != nil {
		f.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	return f.Close()
}

// showBurstProgress prints, once a second from the release on, how many clicks have their answer
// and at what rate, so an operator watching a long burst sees it move. The returned stop ends it.
func showBurstProgress(w io.Writer, at time.Time, answered *atomic.Int64) (stop func()) {
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		select {
		case <-done:
			return
		case <-time.After(time.Until(at)):
		}
		t := time.NewTicker(time.Second)
		defer t.Stop()
		last := int64(0)
		for {
			select {
			case <-done:
				return
			case <-t.C:
				n := answered.Load()
				fmt.Fprintf(w, "burst: %d answered (%d/s)\n", n, n-last)
				last = n
			}
		}
	}()
	return func() {
		close(done)
		<-finished
	}
}

// lockedWriter serializes writes from goroutines that share one progress stream.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(b)
}
