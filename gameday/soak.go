package gameday

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/fsctl/fsctl/internal/platform/durations"
	"github.com/fsctl/fsctl/internal/platform/redisconn"
	"github.com/fsctl/fsctl/internal/platform/table"
)

// SoakSample is one look, during a soak, at the checkout instances and at Redis. The instance
// figures are the largest among the live instances: a leak shows in whichever lives longest. At
// is from the start of the run: atMs in JSON (deprecated: at, nanoseconds).
type SoakSample struct {
	At          time.Duration `json:"at"`
	Instances   int           `json:"instances"` // instances whose /metrics answered
	RSS         float64       `json:"rssBytes"`
	Heap        float64       `json:"heapInuseBytes"`
	Goroutines  float64       `json:"goroutines"`
	OpenFiles   float64       `json:"openFiles"`
	RedisMemory float64       `json:"redisUsedMemory"`
	Keys        float64       `json:"redisKeys"`
	// Permanent are the keys without an expiry: the sales' own structure. A record written per
	// request (an idempotency record, an order reference, a release marker) carries a TTL.
	Permanent   float64 `json:"permanentKeys"`
	Idempotency float64 `json:"idempotencyRecords"`
	Tickets     float64 `json:"roomTickets"` // entries of the waiting rooms' ticket hashes
	Error       string  `json:"error,omitempty"`
}

// Soak is what a soak saw over time and its verdicts. Every is everyMs in JSON (deprecated: every,
// nanoseconds).
type Soak struct {
	Every    time.Duration `json:"every"`
	Samples  []SoakSample  `json:"samples"`
	Verdicts []SoakVerdict `json:"verdicts"`
	Notes    []string      `json:"notes,omitempty"`
}

// MarshalJSON writes the sample with atMs (and the deprecated at).
func (s SoakSample) MarshalJSON() ([]byte, error) {
	type plain SoakSample
	return durations.MarshalMs(plain(s), durations.Field("at", &s.At))
}

// UnmarshalJSON reads a sample written with atMs, or before it.
func (s *SoakSample) UnmarshalJSON(b []byte) error {
	type plain SoakSample
	return durations.UnmarshalMs(b, (*plain)(s), durations.Field("at", &s.At))
}

// MarshalJSON writes the soak with everyMs (and the deprecated every).
func (s Soak) MarshalJSON() ([]byte, error) {
	type plain Soak
	return durations.MarshalMs(plain(s), durations.Field("every", &s.Every))
}

// UnmarshalJSON reads a soak written with everyMs, or before it.
func (s *Soak) UnmarshalJSON(b []byte) error {
	type plain Soak
	return durations.UnmarshalMs(b, (*plain)(s), durations.Field("every", &s.Every))
}

// SoakVerdict says whether one figure stayed bounded.
type SoakVerdict struct {
	Figure string `json:"figure"`
	OK     bool   `json:"ok"`
	Detail string `json:"detail"`
}

// growthRule bounds one figure: the median of the last third of the samples may exceed the
// median of the first third by factor, plus slack, at most. A warm-up (pools filling, the heap
// reaching its GC target) lands in the first third, a burst lifts a sample or two; a leak lifts
// every sample after it, so the last third's middle climbs.
type growthRule struct {
	figure        string
	of            func(SoakSample) float64
	factor, slack float64
	// read says which samples carry the figure.
	read func(SoakSample) bool
}

func instancesRead(s SoakSample) bool { return s.Instances > 0 }
func redisRead(s SoakSample) bool     { return s.Keys > 0 }

// minCostKeys is the fewest keys a sample needs before its bytes per key mean anything: below
// that, Redis's own overhead of about 1 MiB is most of it.
const minCostKeys = 1000

var soakRules = []growthRule{
	{"instance RSS", func(s SoakSample) float64 { return s.RSS }, 1.5, 32 << 20, instancesRead},
	{"instance heap in use", func(s SoakSample) float64 { return s.Heap }, 1.5, 32 << 20, instancesRead},
	{"instance goroutines", func(s SoakSample) float64 { return s.Goroutines }, 1.5, 50, instancesRead},
	{"instance open files", func(s SoakSample) float64 { return s.OpenFiles }, 1.5, 20, instancesRead},
	{"Redis keys without expiry", func(s SoakSample) float64 { return s.Permanent }, 1.1, 50, redisRead},
	// Records with a TTL (24 h for idempotency) grow through a 30-minute soak by design; what
	// must not grow is what each key costs (a collection that only ever gains members).
	{"Redis bytes per key", func(s SoakSample) float64 { return s.RedisMemory / s.Keys }, 1.5, 256,
		func(s SoakSample) bool { return s.Keys >= minCostKeys }},
}

// minSoakSamples is the fewest samples a soak judges from: two in each third.
const minSoakSamples = 6

// Judge sets the verdicts from the samples.
func (s *Soak) Judge() {
	s.Verdicts = nil
	for _, r := range soakRules {
		var series []float64
		for _, sm := range s.Samples {
			if r.read(sm) {
				series = append(series, r.of(sm))
			}
		}
		s.Verdicts = append(s.Verdicts, judgeGrowth(r, series))
	}
}

func judgeGrowth(r growthRule, series []float64) SoakVerdict {
	v := SoakVerdict{Figure: r.figure}
	if len(series) < minSoakSamples {
		v.Detail = fmt.Sprintf("%d samples; at least %d are needed (run longer or sample more often)", len(series), minSoakSamples)
		return v
	}
	third := len(series) / 3
	first, last := median(series[:third]), median(series[len(series)-third:])
	bound := first*r.factor + r.slack
	v.OK = last <= bound
	v.Detail = fmt.Sprintf("first third's median %s, last third's %s (bound %s; peak %s)", human(first), human(last), human(bound), human(slices.Max(series)))
	return v
}

func median(xs []float64) float64 {
	s := slices.Sorted(slices.Values(xs))
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// human prints a figure compactly: bytes in MiB from 1 MiB up.
func human(x float64) string {
	if x >= 1<<20 {
		return fmt.Sprintf("%.1f MiB", x/(1<<20))
	}
	return strconv.FormatFloat(x, 'f', 0, 64)
}

// OK says whether every figure stayed bounded.
func (s *Soak) OK() bool {
	for _, v := range s.Verdicts {
		if !v.OK {
			return false
		}
	}
	return len(s.Verdicts) > 0
}

// Render writes the samples as a table over time, then the verdicts.
func (s *Soak) Render(w io.Writer) error {
	fmt.Fprintf(w, "\nsoak: a sample every %s (instance figures: the largest live instance)\n", s.Every)
	// Narrow: Redis's own counts go first, then the instance count and heap (RSS, goroutines,
	// open files and Redis's memory are what the verdicts judge).
	t := table.New(w, "at", "instances", "RSS MiB", "heap MiB", "goroutines", "open files", "Redis MiB", "keys", "no expiry", "idempotency", "tickets").
		Wrap("tickets", 0).Drop("idempotency", "no expiry", "keys", "instances", "heap MiB")
	mib := func(x float64) string { return fmt.Sprintf("%.1f", x/(1<<20)) }
	n := func(x float64) string { return strconv.FormatFloat(x, 'f', 0, 64) }
	for _, sm := range s.Samples {
		row := []any{sm.At.Round(time.Second).String(), fmt.Sprint(sm.Instances), mib(sm.RSS), mib(sm.Heap), n(sm.Goroutines), n(sm.OpenFiles),
			mib(sm.RedisMemory), n(sm.Keys), n(sm.Permanent), n(sm.Idempotency), n(sm.Tickets)}
		if sm.Error != "" {
			row[len(row)-1] = fmt.Sprint(row[len(row)-1]) + " (" + clip(sm.Error, 60) + ")"
		}
		if err := t.Append(row...); err != nil {
			return err
		}
	}
	if err := t.Render(); err != nil {
		return err
	}
	for _, v := range s.Verdicts {
		fmt.Fprintf(w, "soak %-4s %-26s %s\n", passWord(v.OK), v.Figure, v.Detail)
	}
	for _, note := range s.Notes {
		fmt.Fprintf(w, "soak note: %s\n", note)
	}
	return nil
}

// soakSampler takes a SoakSample every interval until stopped.
type soakSampler struct {
	soak   Soak
	fleet  *Fleet
	rdb    redis.UniversalClient
	client *http.Client
	t0     time.Time
	now    func() time.Time
	mu     sync.Mutex
	stop   context.CancelFunc
	done   chan struct{}
}

// startSoak samples the fleet's live instances and the Redis at redisURL every interval.
func startSoak(ctx context.Context, every time.Duration, fleet *Fleet, redisURL string, t0 time.Time, now func() time.Time) (*soakSampler, error) {
	rdb, err := redisconn.Open(redisURL, redisconn.Tune{})
	if err != nil {
		return nil, err
	}
	s := &soakSampler{soak: Soak{Every: every}, fleet: fleet, rdb: rdb, client: &http.Client{Timeout: 5 * time.Second},
		t0: t0, now: now, done: make(chan struct{})}
	ctx, s.stop = context.WithCancel(context.WithoutCancel(ctx))
	go s.loop(ctx, every)
	return s, nil
}

func (s *soakSampler) loop(ctx context.Context, every time.Duration) {
	defer close(s.done)
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		sm := s.sample(ctx)
		s.mu.Lock()
		s.soak.Samples = append(s.soak.Samples, sm)
		s.mu.Unlock()
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// Stop ends the sampling and returns the soak, judged.
func (s *soakSampler) Stop() *Soak {
	s.stop()
	<-s.done
	_ = s.rdb.Close()
	s.soak.Judge()
	if last := s.soak.Samples[len(s.soak.Samples)-1]; last.Tickets == 0 {
		s.soak.Notes = append(s.soak.Notes, "no waiting-room tickets: this sale has no waiting room")
	}
	s.soak.Notes = append(s.soak.Notes, idempotencyNote(s.soak.Samples))
	return &s.soak
}

// idempotencyNote says how fast the idempotency records grew and where their TTL levels them.
// Only the gains count: a Redis restarted empty drops them all, and the buyers' rate goes on.
func idempotencyNote(samples []SoakSample) string {
	first, last := samples[0], samples[len(samples)-1]
	mins := (last.At - first.At).Minutes()
	if mins <= 0 {
		return "idempotency records: too short to measure their growth"
	}
	gained := 0.0
	for i := 1; i < len(samples); i++ {
		if samples[i].Keys > 0 && samples[i-1].Keys > 0 {
			gained += max(samples[i].Idempotency-samples[i-1].Idempotency, 0)
		}
	}
	rate := gained / mins
	level := max(rate, 0) * 24 * 60
	note := fmt.Sprintf("idempotency records: %.0f at the end, %+.0f a minute; each expires after 24 h (stock.DefaultIdemTTL), so at this rate they level off near %.0f",
		last.Idempotency, rate, level)
	if last.Keys >= minCostKeys {
		note += fmt.Sprintf(", about %s of Redis at this sale's %.0f bytes per key", human(level*last.RedisMemory/last.Keys), last.RedisMemory/last.Keys)
	}
	return note
}

func (s *soakSampler) sample(ctx context.Context) SoakSample {
	sm := SoakSample{At: s.now().Sub(s.t0)}
	var errs []string
	for _, in := range s.fleet.Live() {
		m, err := s.scrape(ctx, in.URL+"/metrics")
		if err != nil {
			errs = append(errs, in.Name+": "+err.Error())
			continue
		}
		sm.Instances++
		sm.RSS = max(sm.RSS, m["process_resident_memory_bytes"])
		sm.Heap = max(sm.Heap, m["go_memstats_heap_inuse_bytes"])
		sm.Goroutines = max(sm.Goroutines, m["go_goroutines"])
		sm.OpenFiles = max(sm.OpenFiles, m["process_open_fds"])
	}
	if err := s.sampleRedis(ctx, &sm); err != nil {
		errs = append(errs, "redis: "+err.Error())
		sm.Keys = 0 // a half-read Redis is left out of the Redis verdicts
	}
	sm.Error = strings.Join(errs, "; ")
	return sm
}

// soakFigures are the instance metrics a sample reads (the Prometheus Go and process collectors').
var soakFigures = []string{"process_resident_memory_bytes", "go_memstats_heap_inuse_bytes", "go_goroutines", "process_open_fds"}

// scrape reads soakFigures from one /metrics page.
func (s *soakSampler) scrape(ctx context.Context, url string) (map[string]float64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := s.client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("/metrics answered %d", resp.StatusCode)
	}
	return parseFigures(resp.Body)
}

// parseFigures reads the unlabelled samples of soakFigures from a Prometheus text page.
func parseFigures(r io.Reader) (map[string]float64, error) {
	out := map[string]float64{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		name, value, ok := strings.Cut(sc.Text(), " ")
		if !ok {
			continue
		}
		for _, f := range soakFigures {
			if name == f {
				v, err := strconv.ParseFloat(strings.TrimSpace(value), 64)
				if err != nil {
					return nil, fmt.Errorf("%s: %w", name, err)
				}
				out[name] = v
			}
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(out) < len(soakFigures) {
		return nil, fmt.Errorf("/metrics lacks some of %s", strings.Join(soakFigures, ", "))
	}
	return out, nil
}

// sampleRedis reads used memory, key and expiry counts from every master, then counts the
// idempotency records and the rooms' tickets (one SCAN each over the keyspace).
func (s *soakSampler) sampleRedis(ctx context.Context, sm *SoakSample) error {
	var mu sync.Mutex
	err := redisconn.ForEachMaster(ctx, s.rdb, func(ctx context.Context, node *redis.Client) error {
		info, err := node.Info(ctx, "memory", "keyspace").Result()
		if err != nil {
			return err
		}
		mem, keys, expires := parseRedisInfo(info)
		mu.Lock()
		defer mu.Unlock()
		sm.RedisMemory += mem
		sm.Keys += keys
		sm.Permanent += keys - expires
		return nil
	})
	if err != nil {
		return err
	}
	if err := redisconn.Scan(ctx, s.rdb, "*:idem:*", 5000, func(string) { sm.Idempotency++ }); err != nil {
		return err
	}
	var tickets []string
	if err := redisconn.Scan(ctx, s.rdb, "{fs-room:*}:tickets", 5000, func(k string) { tickets = append(tickets, k) }); err != nil {
		return err
	}
	for _, k := range tickets {
		n, err := s.rdb.HLen(ctx, k).Result()
		if err != nil {
			return err
		}
		sm.Tickets += float64(n)
	}
	return nil
}

// parseRedisInfo reads used_memory and the keys and expires of every database from INFO.
func parseRedisInfo(info string) (mem, keys, expires float64) {
	for line := range strings.Lines(info) {
		line = strings.TrimSpace(line)
		if v, ok := strings.CutPrefix(line, "used_memory:"); ok {
			mem, _ = strconv.ParseFloat(v, 64)
			continue
		}
		// db0:keys=12,expires=3,avg_ttl=0,subexpiry=0
		if !strings.HasPrefix(line, "db") {
			continue
		}
		_, fields, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		for f := range strings.SplitSeq(fields, ",") {
			k, v, _ := strings.Cut(f, "=")
			n, _ := strconv.ParseFloat(v, 64)
			switch k {
			case "keys":
				keys += n
			case "expires":
				expires += n
			}
		}
	}
	return mem, keys, expires
}
