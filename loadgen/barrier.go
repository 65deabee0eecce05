package loadgen

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/fsctl/fsctl/internal/contract/outcome"
)

// Result is what a burst produced.
type Result struct {
	// At is the intended release, Released when the barrier really opened.
	At, Released time.Time
	// Prepared is how long preparing buyers and warming connections took.
	Prepared time.Duration
	// PrepareCPU is the CPU time (user and system) this process spent before the release,
	// BurstCPU from the release to the last answer: what the generator took from a machine it
	// shares. Zero where the process's usage cannot be read.
	PrepareCPU, BurstCPU time.Duration
	cpuStart             time.Duration // ProcessCPU when the preparation began
	Buyers               int
	// Conns is the size of the connection pool the buyers shared.
	Conns int
	// Resolved is the engine and request timeout the burst ran with.
	Resolved Resolution
	Records  []Record
	// FollowUps is what every reserved buyer did next, when the plan has After.
	FollowUps []FollowUp
	// Reads are the page loads of the plan's Refresh, apart from Records: the invariants judge the
	// purchases alone. Persisted is how each reservation reached PostgreSQL, when the plan has Poll.
	Reads     []Record
	Persisted []Persistence
	// Refresh and Poll are the plan's, ReadConns the size of the pool the reads and polls shared
	// (0 when there were none).
	Refresh   *Refresh
	Poll      *OrderPoll
	ReadConns int
}

// fileHeadroom is kept free of the pool for the process's own files, the resolver and the like.
const fileHeadroom = 64

// CheckFiles refuses a pool of conns connections that cannot fit under the open-file limit.
func CheckFiles(conns int, limit uint64) error {
	if uint64(conns)+fileHeadroom > limit {
		return fmt.Errorf("%d connections need %d open files but this process may open %d (ulimit -n): "+
			"lower --conns or split the burst over processes with --shard", conns, conns+fileHeadroom, limit)
	}
	return nil
}

// ProcessCPU is the user and system CPU time this process has used so far (0 when unknown).
func ProcessCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// released marks the barrier open: the release instant, and the CPU spent up to it.
func (r *Result) released(now time.Time) {
	r.Released = now
	r.PrepareCPU = ProcessCPU() - r.cpuStart
}

func openFileLimit() (uint64, error) {
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
		return 0, fmt.Errorf("read the open-file limit: %w", err)
	}
	return rl.Cur, nil
}

// click is one prepared click waiting for the barrier.
type click struct {
	rec     *Record // the prepared first attempt, in the slice prepare returns beside the clicks
	attempt Attempt // the http engine's
	token   string
	wire    []byte // the raw engine's: the request as it goes on the wire
}

// Run prepares every buyer of the plan's shard, warms the connection pool, parks one goroutine
// per click, opens the barrier at p.At and returns every request's record once all have answered.
func Run(ctx context.Context, p Plan) (*Result, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	// Resolved once: both engines and the follow-ups read p.Engine and p.Timeout from here on.
	p, settled := p.resolved()
	limit, err := openFileLimit()
	if err != nil {
		return nil, err
	}
	files := p.Conns
	if p.reads() {
		files += p.readConns()
	}
	if err := CheckFiles(files, limit); err != nil {
		return nil, err
	}
	p.Profile = p.target()
	if p.Minter, err = p.minter(); err != nil {
		return nil, err
	}
	if err := p.enoughUsers(); err != nil {
		return nil, err
	}
	if p.Classifier, err = p.classifier(); err != nil {
		return nil, err
	}
	begin, cpuStart := p.now(), ProcessCPU()
	resume := holdCollector(p.Buyers * max(1, p.Clicks)) // a shard prepares fewer: a budget, not a count
	clicks, recs, err := p.prepare()
	resume()
	if err != nil {
		return nil, err
	}
	reads, err := p.startReads(ctx)
	if err != nil {
		return nil, err
	}
	var res *Result
	if p.Engine == EngineRaw {
		res, err = p.runRaw(ctx, clicks, recs, begin, cpuStart)
	} else {
		res, err = p.runHTTP(ctx, clicks, begin, cpuStart, reads)
	}
	readRecs := reads.finish(err != nil)
	if err != nil {
		return nil, err
	}
	res.Resolved = settled
	res.BurstCPU = ProcessCPU() - res.cpuStart - res.PrepareCPU
	if reads != nil {
		res.Reads, res.Refresh, res.Poll, res.ReadConns = readRecs, p.Refresh, p.Poll, p.readConns()
	}
	return res, nil
}

// runHTTP is Run on the net/http engine: every journey, the follow-ups after a reservation (the
// order polls over the reads' pool). A burst parks one goroutine per click, or, when each click
// is one HTTP/1.1 request and nothing more, a pool of one goroutine per connection (pooled).
func (p Plan) runHTTP(ctx context.Context, clicks []click, begin time.Time, cpuStart time.Duration, reads *readSide) (*Result, error) {
	client := p.NewClient(p.Conns, p.Timeout)
	defer client.CloseIdleConnections()
	if err := warm(ctx, client, p.BaseURL, p.healthPath(), p.Conns); err != nil {
		return nil, err
	}
	var readClient *http.Client
	if reads != nil {
		readClient = reads.client
	}
	res := &Result{At: p.At, Buyers: len(clicks) / p.Clicks, Conns: p.Conns, Prepared: p.now().Sub(begin), cpuStart: cpuStart}
	out := make([]bought, len(clicks))
	pooled := p.pooled()
	run := func(i int) {
		ctx := ctx
		if pooled && p.Timeout > 0 {
			// The buyer clicked at the release: its timeout counts the wait for a worker, as it
			// counted the wait for a connection when every buyer had its own goroutine.
			var cancel context.CancelFunc
			ctx, cancel = context.WithDeadline(ctx, clicks[i].rec.Intended.Add(p.Timeout))
			defer cancel()
		}
		out[i] = p.buy(ctx, client, readClient, &clicks[i])
		p.settled(1)
	}
	var err error
	switch {
	case pooled:
		err = p.burst(ctx, clicks, run, res, min(p.Conns, len(clicks)))
	case p.Schedule == nil:
		err = p.burst(ctx, clicks, run, res, len(clicks))
	default:
		err = p.open(ctx, clicks, run, res)
	}
	if err != nil {
		return nil, err
	}
	for _, b := range out {
		res.Records = append(res.Records, b.recs...)
		if b.follow != nil {
			res.FollowUps = append(res.FollowUps, *b.follow)
		}
		if b.persisted != nil {
			res.Persisted = append(res.Persisted, *b.persisted)
		}
	}
	return res, nil
}

// pooled reports whether the net/http engine sends the burst through a pool of conns goroutines:
// when every click is one request and nothing more (the direct buy, no retry or replay, nothing
// after the answer, one instant for all) over HTTP/1.1, where conns connections carry at most
// conns requests at a time. Parking a goroutine per click then only adds cost: tens of thousands
// of goroutines queue in the transport for the same conns connections, each grows its stack
// there, and the collector scans every one (BenchmarkBlastVsVegetaThroughput: 1.6 times vegeta's
// CPU per request, 1.1 times with the pool). A buyer the pool has not reached yet waits for a
// worker instead of a connection, and its record shows the wait as it did (written and latency
// count from the release; started is when a worker took it, as when a raw engine's lane wrote
// it). HTTP/2 carries many requests over one connection, so an h2 plan keeps its goroutine per
// click.
func (p Plan) pooled() bool {
	_, direct := p.Journey.(Purchase)
	return (p.Journey == nil || direct) && p.Schedule == nil && p.Retries == 0 && p.Replays == 0 &&
		p.After == nil && p.Poll == nil && speaksOnlyHTTP1(p.HTTP, p.BaseURL)
}

// speaksOnlyHTTP1 reports whether a plan's client speaks HTTP/1.1 to base whatever the target
// offers: asked to, or by default to a plain http:// URL (nothing there says it would take h2c).
func speaksOnlyHTTP1(version, base string) bool {
	if version == HTTP1 {
		return true
	}
	return (version == "" || version == HTTPAuto) && strings.HasPrefix(strings.ToLower(base), "http://")
}

// burst parks workers goroutines and releases them all at p.At; each runs the next click not yet
// taken, in order, until none is left: one click each when there is a goroutine per click.
func (p Plan) burst(ctx context.Context, clicks []click, run func(int), res *Result, workers int) error {
	release := make(chan struct{})
	var next atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			<-release
			for i := int(next.Add(1) - 1); i < len(clicks); i = int(next.Add(1) - 1) {
				run(i)
			}
		})
	}
	defer wg.Wait()
	defer close(release)
	if err := sleepUntil(ctx, p.At, p.now, spin); err != nil {
		return err
	}
	res.released(p.now())
	return nil
}

// open is the open model: a pacer starts each click at its intended time. A click the pacer
// starts late keeps its intended time, so the delay shows in its latency.
func (p Plan) open(ctx context.Context, clicks []click, run func(int), res *Result) error {
	var wg sync.WaitGroup
	defer wg.Wait()
	for i := range clicks {
		// No spin: at hundreds of buyers a second the pacer would never sleep, and its lateness
		// is measured anyway.
		if err := sleepUntil(ctx, clicks[i].rec.Intended, p.now, 0); err != nil {
			return err
		}
		if i == 0 {
			res.released(p.now())
		}
		wg.Go(func() { run(i) })
	}
	return nil
}

// bought is what one click came to: its records and, for a reservation, what its buyer did next.
type bought struct {
	recs      []Record
	follow    *FollowUp
	persisted *Persistence
}

// buy fires one click and, when it reserved, polls the order until it is persisted (over the
// reads' client) and then pays, cancels or abandons, as far as the plan says so. It takes the
// plan and the click by pointer, as fire does: it runs on every click's goroutine, and a copy of
// either on its stack would make every one of those stacks grow.
func (p *Plan) buy(ctx context.Context, client, reads *http.Client, c *click) bought {
	b := bought{recs: p.fire(ctx, client, c)}
	for i := range b.recs {
		if r := &b.recs[i]; r.Outcome == outcome.Reserved && r.OrderID != "" {
			p.followUp(ctx, client, reads, c.token, r, &b)
			break
		}
	}
	return b
}

// followUp is what a buyer does with the reservation rec: it polls the order until it is
// persisted (over the reads' client) and then pays, cancels or abandons, as far as the plan says
// so, into b.
func (p *Plan) followUp(ctx context.Context, client, reads *http.Client, token string, rec *Record, b *bought) {
	if p.Poll != nil {
		ps := p.Poll.poll(ctx, reads, orderURL(p.Profile, p.BaseURL, *rec), token, *rec, p.now)
		b.persisted = &ps
	}
	if p.After != nil {
		f := p.After.followUp(ctx, client, p.Profile, p.BaseURL, token, *rec, p.Timeout, p.now)
		b.follow = &f
	}
}

// prepare mints every buyer's token and builds every click's request before the start. Buyers
// are prepared on every CPU: an RS256 signature costs milliseconds, and thousands of them one
// after the other would make the release late.
func (p Plan) prepare() ([]click, []Record, error) {
	journey := p.Journey
	if journey == nil {
		journey = Purchase{}
	}
	roster := p.Roster()
	now := p.now()
	// The token must outlive the wait for the last buyer's release and the burst itself.
	last := p.At
	if len(roster) > 0 {
		last = p.Intended(roster[len(roster)-1])
	}
	ttl := last.Sub(now) + p.target().TokenTTL()
	// The records live apart from the clicks: the raw engine reports them as they are, and lets go
	// of the clicks (tokens, request bytes) once its lanes hold the bytes.
	recs := make([]Record, len(roster)*p.Clicks)
	clicks := make([]click, len(recs))
	for i := range clicks {
		clicks[i].rec = &recs[i]
	}
	errs := make([]error, len(roster))
	tmpl := newRawRequest(p.target())
	step := max(1, len(roster)/10)
	var next atomic.Int64
	var failed atomic.Bool
	var mu sync.Mutex // serializes the progress calls
	done := 0
	// A goroutine takes the next unit of work: buyers u, u+stride, u+2·stride... Most often a unit
	// is one buyer (stride is all of them). The raw engine sends click i over connection
	// i mod rawLanes, and with one click a buyer and connections enough to share out, a unit is a
	// connection's buyers instead: prepared one after the other, their requests lie back to back
	// in the goroutine's slab (wireScratch.keep) and the release hands each connection's share to
	// the kernel in a few pieces rather than one a buyer.
	workers := min(runtime.GOMAXPROCS(0), max(1, len(roster)))
	stride := len(roster)
	if lanes := p.rawLanes(len(roster)); p.Engine == EngineRaw && p.Clicks == 1 && lanes >= 8*workers {
		stride = lanes
	}
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			var w wireScratch
			if p.Engine == EngineRaw {
				w.tmpl = &tmpl
			}
			for u := int(next.Add(1) - 1); u < stride && !failed.Load(); u = int(next.Add(1) - 1) {
				for n := u; n < len(roster) && !failed.Load(); n += stride {
					if errs[n] = p.prepareBuyer(journey, roster[n], now, ttl, clicks[n*p.Clicks:(n+1)*p.Clicks], &w); errs[n] != nil {
						failed.Store(true)
						return
					}
					if p.Progress != nil {
						mu.Lock()
						if done++; done%step == 0 || done == len(roster) {
							p.Progress(done, len(roster))
						}
						mu.Unlock()
					}
				}
			}
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, nil, err
		}
	}
	return clicks, recs, nil
}

// prepareBuyer mints one buyer's token and prepares its clicks into out (w is the preparing
// goroutine's own scratch for the raw engine's bytes).
func (p Plan) prepareBuyer(journey Journey, b Buyer, now time.Time, ttl time.Duration, out []click, w *wireScratch) error {
	tok, err := p.Minter.Mint(b.User, b.Target.SaleID, now, ttl)
	if err != nil {
		return fmt.Errorf("token for %s: %w", b.User, err)
	}
	at := p.At.UnixNano()
	for c := 1; c <= p.Clicks; c++ {
		key := clickKey(b.User, at, c) // p.Key's, without copying the plan a click
		*out[c-1].rec = Record{Buyer: b.Index, User: b.User, Target: b.Target, Key: key, Click: c, Intended: p.Intended(b)}
		if p.Engine == EngineRaw {
			// The raw engine sends these bytes and nothing else: no journey to prepare, and the
			// request serialized here, on every CPU, instead of in one loop before the release.
			// The token is in the bytes: the click need not keep it.
			if err := p.serialize(&out[c-1], tok, w); err != nil {
				return err
			}
			continue
		}
		out[c-1].token = tok
		a, err := journey.Prepare(p, b, key, tok)
		if err != nil {
			return err
		}
		out[c-1].attempt = a
	}
	return nil
}

// fire runs one click: its first attempt, retries with the same key while the answer is a
// failure, then the replays.
func (p *Plan) fire(ctx context.Context, client *http.Client, c *click) []Record {
	recs := c.try(ctx, client, make([]Record, 0, 1))
	for n := 0; n < p.Retries && p.retries(&recs[len(recs)-1]) && ctx.Err() == nil; n++ {
		if !p.wait(ctx, &recs[len(recs)-1]) {
			break
		}
		recs = c.try(ctx, client, recs)
	}
	for n := 0; n < p.Replays && ctx.Err() == nil; n++ {
		recs = c.try(ctx, client, recs)
	}
	return recs
}

// try sends the click's next attempt and appends its record to recs. The record is filled in
// place: it is hundreds of bytes, and a copy of it on the click's stack would make that stack grow.
func (c *click) try(ctx context.Context, client *http.Client, recs []Record) []Record {
	recs = append(recs, Record{})
	r := &recs[len(recs)-1]
	*r = *c.rec
	r.Attempt = len(recs)
	c.attempt(ctx, client, r)
	return recs
}

// warm dials the pool: conns concurrent GETs of the target's health URL make the transport open
// conns connections, which then sit idle until the release. Any status will do (a foreign target
// may have no health endpoint); a connection that cannot be made means the target is not there.
func warm(ctx context.Context, client *http.Client, base, health string, conns int) error {
	errs := make([]error, conns)
	var wg sync.WaitGroup
	for i := range conns {
		wg.Go(func() {
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+health, nil)
			if err == nil {
				var resp *http.Response
				if resp, err = client.Do(req); err == nil {
					_, _ = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
				}
			}
			errs[i] = err
		})
	}
	wg.Wait()
	return unreachable(base, "warm-up connections", errs)
}

// unreachable turns the errors of dialling a pool into one error naming the target and how many
// connections failed (nil when none did).
func unreachable(base, what string, errs []error) error {
	failed := 0
	var first error
	for _, err := range errs {
		if err != nil {
			failed++
			first = cmp.Or(first, err)
		}
	}
	if failed > 0 {
		return fmt.Errorf("target %s unreachable: %d of %d %s failed: %w", base, failed, len(errs), what, first)
	}
	return nil
}

// spin is how long before the release the barrier stops sleeping and polls the clock: timer
// wake-ups are late by up to a millisecond or so, spinning is not.
const spin = 2 * time.Millisecond

// sleepUntil returns at the instant at, sleeping until spin before it and then spinning.
func sleepUntil(ctx context.Context, at time.Time, now func() time.Time, spin time.Duration) error {
	if d := at.Sub(now()) - spin; d > 0 {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
	for now().Before(at) {
		if ctx.Err() != nil {
			return ctx.Err()
		}
	}
	return nil
}

// retries says whether a try is followed by another with the same key: a failure, or, for a
// buyer who honours Retry-After, any answer that asked to be retried later.
func (p *Plan) retries(r *Record) bool {
	return Retryable(r.Outcome) || p.RetryAfter > 0 && r.RetryAfter > 0
}

// wait holds a retry back for what the answer's Retry-After asked, at most p.RetryAfter (not at
// all when the plan retries at once); false when ctx ended first.
func (p *Plan) wait(ctx context.Context, r *Record) bool {
	d := min(r.RetryAfter, p.RetryAfter)
	if d <= 0 {
		return true
	}
	return sleepUntil(ctx, time.Now().Add(d), time.Now, 0) == nil
}
