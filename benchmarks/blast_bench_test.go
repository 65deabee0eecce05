package benchmarks

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"strconv"
	"testing"
	"time"

	vegeta "github.com/tsenart/vegeta/v12/lib"

	"github.com/fsctl/fsctl/loadgen"
)

// The blast benchmarks compare fsctl blast with vegeta's own attacker against one trivial endpoint
// (204, no body), in the same run, so the figures are read as ratios: on a 2-core box the
// generator and the server share the CPUs and absolute numbers mean little. They need no stack.
// BLAST_BENCH_URL points them at an endpoint of another process (scripts/bench-blast.sh does, so
// wrk measures the same one); BLAST_BENCH_REQUESTS, BLAST_BENCH_BUYERS and BLAST_BENCH_CONNS size them.

// Defaults: the skew burst is the 50,000 buyers, over a pool far below the 20,000
// open-file limit of these machines (an in-process server costs a second descriptor per connection).
const (
	defaultRequests = 20_000
	defaultBurst    = 50_000
	defaultConns    = 200
	burstConns      = 1_000
	preparedBuyers  = 10_000
)

// envInt reads a sizing override, failing the benchmark on a value that is not a positive integer.
func envInt(b *testing.B, name string, def int) int {
	b.Helper()
	s := os.Getenv(name)
	if s == "" {
		return def
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 {
		b.Fatalf("%s=%q: want a positive integer", name, s)
	}
	return n
}

// trivialEndpoint is BLAST_BENCH_URL, or an in-process server answering 204 to every request.
func trivialEndpoint(b *testing.B) string {
	b.Helper()
	if u := os.Getenv("BLAST_BENCH_URL"); u != "" {
		return u
	}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusNoContent)
	}))
	srv.Start()
	b.Cleanup(srv.Close)
	return srv.URL
}

// benchPlan is a one-click-per-buyer burst at base. The release is far enough ahead for the
// preparation and the warm-up; the measures below count from the real release, not from At.
func benchPlan(base string, buyers, conns int) loadgen.Plan {
	return loadgen.Plan{
		BaseURL: base, Targets: []loadgen.Target{{SaleID: "bench", ItemID: "item"}},
		Buyers: buyers, UserPrefix: "bench-", Secret: []byte("bench-secret-0123456789"), Clicks: 1,
		At:    time.Now().Add(time.Second + time.Duration(buyers)*40*time.Microsecond),
		Conns: conns, Timeout: time.Minute, Engine: loadgen.EngineHTTP, // the net/http baseline; callers set raw
	}
}

// runBlast fires one burst and fails the benchmark unless every request was answered 204: a
// figure from a burst that lost requests would flatter it.
func runBlast(b *testing.B, p loadgen.Plan) *loadgen.Result {
	b.Helper()
	res, err := loadgen.Run(context.Background(), p)
	if err != nil {
		b.Fatal(err)
	}
	if len(res.Records) != p.Buyers {
		b.Fatalf("blast: %d records for %d buyers", len(res.Records), p.Buyers)
	}
	for _, r := range res.Records {
		if r.Status != http.StatusNoContent {
			b.Fatalf("blast: buyer %d answered %d %s", r.Buyer, r.Status, r.Error)
		}
	}
	return res
}

// hits is a vegeta pacer at a rate no attacker reaches (no wait between ticks) that stops after n.
type hits uint64

// Pace hands out the next tick at once until n were sent.
func (n hits) Pace(_ time.Duration, sent uint64) (time.Duration, bool) { return 0, sent >= uint64(n) }

// Rate is what the pacer asks for: unbounded.
func (hits) Rate(time.Duration) float64 { return 1e12 }

// runVegeta sends n requests with workers workers over at most conns connections, after a
// warm-up that dials the connections (blast's pool is warmed too), and returns every result and
// the CPU this process spent from the attack's start to its last result.
// An attacker stops for good after one attack, so the warm-up's attacker and the measured one
// share a client shaped like vegeta's default (its dialer's keep-alive, no proxy).
func runVegeta(b *testing.B, base string, n, workers, conns int) ([]vegeta.Result, time.Duration) {
	b.Helper()
	client := &http.Client{Timeout: time.Minute, Transport: &http.Transport{
		DialContext:         (&net.Dialer{KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConnsPerHost: conns, MaxConnsPerHost: conns,
	}}
	defer client.CloseIdleConnections()
	attacker := func(w int) *vegeta.Attacker {
		return vegeta.NewAttacker(vegeta.Client(client), vegeta.Workers(uint64(w)), vegeta.MaxWorkers(uint64(w)))
	}
	tr := vegeta.NewStaticTargeter(vegeta.Target{Method: http.MethodPost, URL: base + "/api/v1/sales/bench/items/item/purchase"})
	for range attacker(conns).Attack(tr, hits(conns), 0, "warm") {
	}
	atk := attacker(workers)
	out := make([]vegeta.Result, 0, n)
	cpu := loadgen.ProcessCPU()
	for r := range atk.Attack(tr, hits(n), 0, "bench") {
		if r.Code != http.StatusNoContent {
			b.Fatalf("vegeta: hit %d answered %d %s", r.Seq, r.Code, r.Error)
		}
		out = append(out, *r)
	}
	cpu = loadgen.ProcessCPU() - cpu
	if len(out) != n {
		b.Fatalf("vegeta: %d results for %d hits", len(out), n)
	}
	return out, cpu
}

// span is the distance between the earliest and the latest of ts.
func span(ts []time.Time) time.Duration {
	lo, hi := ts[0], ts[0]
	for _, t := range ts[1:] {
		if t.Before(lo) {
			lo = t
		}
		if t.After(hi) {
			hi = t
		}
	}
	return hi.Sub(lo)
}

// BenchmarkBlastVsVegetaThroughput releases the same number of requests through blast (prepared
// buyers over a warmed pool, on the http engine and on the raw one) and vegeta's attacker (as many workers as connections, a pacer it
// cannot keep up with), and reports each one's requests per second and blast's over vegeta's, and
// the CPU the http engine and vegeta spent per request.
func BenchmarkBlastVsVegetaThroughput(b *testing.B) {
	base := trivialEndpoint(b)
	n := envInt(b, "BLAST_BENCH_REQUESTS", defaultRequests)
	conns := envInt(b, "BLAST_BENCH_CONNS", defaultConns)
	var blastRate, rawRate, vegetaRate float64
	var blastCPU, vegetaCPU time.Duration
	// From the release to the last answer: the burst's whole life, preparation excluded.
	rate := func(res *loadgen.Result) float64 {
		done := make([]time.Time, 0, n)
		for _, r := range res.Records {
			done = append(done, r.Done)
		}
		return float64(n) / span(append(done, res.Released)).Seconds()
	}
	for b.Loop() {
		res := runBlast(b, benchPlan(base, n, conns))
		blastRate += rate(res)
		blastCPU += res.BurstCPU
		raw := benchPlan(base, n, conns)
		raw.Engine = loadgen.EngineRaw
		rawRate += rate(runBlast(b, raw))

		results, cpu := runVegeta(b, base, n, conns, conns)
		vegetaCPU += cpu
		ends := make([]time.Time, 0, 2*n)
		for _, r := range results {
			ends = append(ends, r.Timestamp, r.End())
		}
		vegetaRate += float64(n) / span(ends).Seconds()
	}
	blastRate /= float64(b.N)
	rawRate /= float64(b.N)
	vegetaRate /= float64(b.N)
	b.ReportMetric(blastRate, "blast-req/s")
	b.ReportMetric(rawRate, "raw-req/s")
	b.ReportMetric(vegetaRate, "vegeta-req/s")
	b.ReportMetric(blastRate/vegetaRate, "blast/vegeta")
	b.ReportMetric(rawRate/vegetaRate, "raw/vegeta")
	// This process's CPU from the release (blast) or the attack's start (vegeta) to the last
	// answer, per request: the trivial endpoint runs in its own process.
	perRequest := func(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1000 / float64(n*b.N) }
	b.ReportMetric(perRequest(blastCPU), "blast-cpu-us/req")
	b.ReportMetric(perRequest(vegetaCPU), "vegeta-cpu-us/req")
}

// BenchmarkBlastVsVegetaReleaseSkew releases one large burst both ways. Blast's release spread is
// from the first buyer to the last calling the client after the barrier opened (on the net/http
// engine a direct purchase over HTTP/1.1 goes through one worker per connection, so the last
// buyer calls it when a worker reaches it); its written spread, first to last request on the
// wire, also counts the wait for one of the pool's connections. The raw engine's spreads run from its first write to its last write's start
// (released) and return (written); a connection's requests beyond its window wait for answers.
// Vegeta's is the spread of its results' timestamps with one worker per hit: its pacer hands the
// ticks out one at a time.
func BenchmarkBlastVsVegetaReleaseSkew(b *testing.B) {
	base := trivialEndpoint(b)
	n := envInt(b, "BLAST_BENCH_BUYERS", defaultBurst)
	conns := envInt(b, "BLAST_BENCH_CONNS", burstConns)
	var released, written, rawReleased, rawWritten, paced time.Duration
	spans := func(res *loadgen.Result) (time.Duration, time.Duration) {
		starts := make([]time.Time, 0, n)
		wires := make([]time.Time, 0, n)
		for _, r := range res.Records {
			starts = append(starts, r.Started)
			wires = append(wires, r.Written)
		}
		return span(starts), span(wires)
	}
	for b.Loop() {
		rel, wr := spans(runBlast(b, benchPlan(base, n, conns)))
		released, written = released+rel, written+wr
		raw := benchPlan(base, n, conns)
		raw.Engine = loadgen.EngineRaw
		rel, wr = spans(runBlast(b, raw))
		rawReleased, rawWritten = rawReleased+rel, rawWritten+wr

		results, _ := runVegeta(b, base, n, n, conns)
		stamps := make([]time.Time, 0, n)
		for _, r := range results {
			stamps = append(stamps, r.Timestamp)
		}
		paced += span(stamps)
	}
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 / float64(b.N) }
	b.ReportMetric(float64(n), "buyers")
	b.ReportMetric(ms(released), "blast-release-ms")
	b.ReportMetric(ms(written), "blast-written-ms")
	b.ReportMetric(ms(rawReleased), "raw-release-ms")
	b.ReportMetric(ms(rawWritten), "raw-written-ms")
	b.ReportMetric(ms(paced), "vegeta-release-ms")
	b.ReportMetric(float64(paced)/float64(released), "vegeta/blast-release")
	b.ReportMetric(float64(paced)/float64(rawReleased), "vegeta/raw-release")
}

// BenchmarkBlastPreparedBuyer measures what preparing a buyer costs (token, key, built request,
// record) on each engine: loadgen.Run reports progress once all are prepared, before it dials
// anything, so the memory is read there and the run is cancelled. Goroutines parked later (the http
// engine's, one per click) are not counted. The raw engine keeps only the request's bytes.
func BenchmarkBlastPreparedBuyer(b *testing.B) {
	base := trivialEndpoint(b)
	var viaHTTP, viaRaw preparedCost
	for b.Loop() {
		viaHTTP.add(b, base, loadgen.EngineHTTP)
		viaRaw.add(b, base, loadgen.EngineRaw)
	}
	per := float64(b.N) * preparedBuyers
	b.ReportMetric(viaHTTP.allocated/per, "alloc-B/buyer")
	b.ReportMetric(viaHTTP.retained/per, "heap-B/buyer")
	b.ReportMetric(viaHTTP.mallocs/per, "allocs/buyer")
	b.ReportMetric(viaRaw.allocated/per, "raw-alloc-B/buyer")
	b.ReportMetric(viaRaw.retained/per, "raw-heap-B/buyer")
	b.ReportMetric(viaRaw.mallocs/per, "raw-allocs/buyer")
}

// preparedCost sums what preparing preparedBuyers buyers allocated and kept.
type preparedCost struct{ allocated, retained, mallocs float64 }

func (c *preparedCost) add(b *testing.B, base, engine string) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	p := benchPlan(base, preparedBuyers, 1)
	p.Engine = engine
	p.At = time.Now().Add(time.Hour)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	seen := false
	p.Progress = func(done, total int) {
		if done < total {
			return
		}
		seen = true
		runtime.ReadMemStats(&after)
		c.allocated += float64(after.TotalAlloc - before.TotalAlloc)
		c.mallocs += float64(after.Mallocs - before.Mallocs)
		runtime.GC()
		runtime.ReadMemStats(&after)
		c.retained += float64(after.HeapAlloc) - float64(before.HeapAlloc)
		cancel()
	}
	_, err := loadgen.Run(ctx, p)
	if !seen || !errors.Is(err, context.Canceled) {
		b.Fatalf("%s engine: want a run cancelled once all %d buyers were prepared, got prepared=%v err=%v", engine, preparedBuyers, seen, err)
	}
}
