package blast

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/fsctl/fsctl/internal/platform/reach"
	"github.com/fsctl/fsctl/loadgen"
)

// Defaults of RemoteWrite's zero fields.
const (
	DefaultMetricsInterval = time.Second
	DefaultPushTimeout     = 5 * time.Second
)

// RemoteWrite is where a burst pushes its metrics while it runs, as Prometheus remote-write v1
// (Prometheus with --web.enable-remote-write-receiver, Mimir, Grafana Cloud, VictoriaMetrics),
// so the burst and the server show on one dashboard. A push that fails is counted and reported,
// never retried: the next one carries the same counters further.
type RemoteWrite struct {
	// URL is the receiver's write endpoint, e.g. http://prometheus:9090/api/v1/write; "" exports
	// nothing and records nothing.
	URL string
	// Header is sent with every push: the Authorization a hosted receiver asks for.
	Header http.Header
	// Interval is the time between pushes, Timeout the bound on each; 0 is the default.
	Interval, Timeout time.Duration
}

// Validate refuses a URL that is not http(s) and a negative interval or timeout.
func (rw RemoteWrite) Validate() error {
	u, err := url.Parse(rw.URL)
	switch {
	case err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "":
		return fmt.Errorf("metrics remote-write URL %q: want an http:// or https:// URL", reach.Redact(rw.URL))
	case rw.Interval < 0 || rw.Timeout < 0:
		return errors.New("metrics push interval and timeout must be positive")
	}
	return nil
}

// MetricsExport is how a burst's pushes went, for the report: a dashboard that misses numbers
// says nothing itself.
type MetricsExport struct {
	// URL is the receiver, without a password.
	URL string `json:"url"`
	// Pushes counts the pushes that ended, Failed those of them that failed. A periodic push
	// still on its way when the burst ends is abandoned for the final one and not counted.
	Pushes int `json:"pushes"`
	Failed int `json:"failed"`
	// LastError is why the last failed push failed.
	LastError string `json:"lastError,omitempty"`
	// Live says the answers were counted as they came (either engine); otherwise they land with
	// the final push.
	Live bool `json:"live"`
}

// String is the report's line about the pushes.
func (m MetricsExport) String() string {
	s := fmt.Sprintf("metrics: %d pushes to %s, none failed", m.Pushes, m.URL)
	if m.Failed > 0 {
		s = fmt.Sprintf("metrics: %d of %d pushes to %s FAILED (last: %s)", m.Failed, m.Pushes, m.URL, m.LastError)
	}
	if !m.Live {
		s += "; answers counted at the end"
	}
	return s
}

// exporter counts one burst and pushes the counts to a remote-write receiver: once when the
// run starts (every counter at 0), every interval, and once after the last answer.
type exporter struct {
	rw       RemoteWrite
	m        *metrics
	external []label
	client   *http.Client
	now      func() time.Time
	warn     io.Writer
	// intended is when each of this shard's clicks is released, sorted; answered counts the
	// settled ones: in flight is the difference.
	intended []time.Time
	answered *atomic.Int64
	// rep (and lastMs, the last push's sample time) is written by the push loop, then, once it
	// has stopped, by the final push.
	rep    MetricsExport
	lastMs int64
}

// newExporter prepares the export of plan p's burst, nil when rw has no URL. Failures are
// warned about once on warn.
func newExporter(rw RemoteWrite, p loadgen.Plan, warn io.Writer) (*exporter, error) {
	if rw.URL == "" {
		return nil, nil
	}
	if err := rw.Validate(); err != nil {
		return nil, err
	}
	if rw.Interval == 0 {
		rw.Interval = DefaultMetricsInterval
	}
	if rw.Timeout == 0 {
		rw.Timeout = DefaultPushTimeout
	}
	shard := p.Shard
	if shard.Count == 0 {
		shard = loadgen.Shard{Index: 0, Count: 1}
	}
	e := &exporter{rw: rw, m: newMetrics(), warn: warn, now: p.Now,
		// The release instant is what blast merge matches a burst's shards by.
		external: []label{{"job", MetricsJob}, {"burst", p.At.UTC().Format(time.RFC3339Nano)},
			{"shard", strconv.Itoa(shard.Index) + "/" + strconv.Itoa(shard.Count)}},
		client: &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()},
		rep:    MetricsExport{URL: reach.Redact(rw.URL)},
	}
	if e.now == nil {
		e.now = time.Now
	}
	for k := 0; k < p.Buyers; k++ {
		if shard.Owns(k) {
			at := p.Intended(loadgen.Buyer{Index: k})
			for range max(p.Clicks, 1) {
				e.intended = append(e.intended, at)
			}
		}
	}
	slices.SortFunc(e.intended, time.Time.Compare)
	return e, nil
}

// report is how the pushes went; nil without an export.
func (e *exporter) report() *MetricsExport {
	if e == nil {
		return nil
	}
	rep := e.rep
	return &rep
}

// run runs the burst while pushing: the buyers as they are prepared, what is in flight and every
// answer as it settles (the http engine's through a wrapped journey, the raw engine's through
// Plan.Settled); otherwise the answers are counted from the records at the end. The final push
// happens whatever the run did, bounded by the timeout.
func (e *exporter) run(ctx context.Context, p loadgen.Plan) (*loadgen.Result, error) {
	defer e.client.CloseIdleConnections()
	e.answered = p.Answered
	show := p.Progress
	p.Progress = func(done, total int) {
		e.m.buyers.Set(float64(done))
		if show != nil {
			show(done, total)
		}
	}
	resolved := p.Resolve()
	counted := p
	// Validate first: a wrapped journey hides a waiting room from the plan's own checks.
	if resolved.Engine == loadgen.EngineHTTP && p.Validate() == nil {
		j := p.Journey
		if j == nil {
			j = loadgen.Purchase{}
		}
		counted.Journey, counted.Engine, e.rep.Live = observed{journey: j, m: e.m}, loadgen.EngineHTTP, true
	} else if resolved.Engine == loadgen.EngineRaw {
		counted.Settled, e.rep.Live = e.m.observe, true
	}
	loop, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		e.pushEvery(loop)
	}()
	res, err := loadgen.Run(ctx, counted)
	stop()
	<-done
	if res != nil {
		// The wrapped journey would read as a journey raw cannot send: report the plan's own choice.
		res.Resolved = resolved
		if !e.rep.Live {
			for i := range res.Records {
				e.m.observe(&res.Records[i])
			}
		}
		e.m.buyers.Set(float64(res.Buyers))
	}
	e.push(context.WithoutCancel(ctx))
	return res, err
}

// pushEvery pushes now and every interval until ctx ends.
func (e *exporter) pushEvery(ctx context.Context) {
	t := time.NewTicker(e.rw.Interval)
	defer t.Stop()
	for {
		e.push(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// push sends what the registry holds now. A push cut short because the loop stopped is not
// counted: the final push carries its numbers.
func (e *exporter) push(ctx context.Context) {
	now := e.now()
	e.m.inFlight.Set(float64(e.inFlight(now)))
	families, err := e.m.reg.Gather()
	if err == nil {
		// Each push's samples are later than the last one's, so a receiver keeps the newest numbers
		// even when an abandoned push reaches it after the final one (Prometheus refuses a sample
		// older than, or as old as, the series' last one).
		ms := max(now.UnixMilli(), e.lastMs+1)
		e.lastMs = ms
		err = e.send(ctx, encodeWriteRequest(toSeries(families, e.external, ms)))
	}
	if err != nil && ctx.Err() != nil {
		return
	}
	e.rep.Pushes++
	if err == nil {
		return
	}
	e.rep.Failed++
	e.rep.LastError = err.Error()
	if e.rep.Failed == 1 {
		fmt.Fprintf(e.warn, "warning: metrics push to %s failed: %v; the burst goes on, and the report counts the failed pushes\n",
			e.rep.URL, err)
	}
}

// inFlight is how many clicks were released by now and are not settled yet.
func (e *exporter) inFlight(now time.Time) int {
	released := sort.Search(len(e.intended), func(i int) bool { return e.intended[i].After(now) })
	var settled int64
	if e.answered != nil {
		settled = e.answered.Load()
	}
	return max(0, released-int(settled))
}

// send POSTs one remote-write body, bounded by the push timeout.
func (e *exporter) send(ctx context.Context, body []byte) error {
	ctx, cancel := context.WithTimeout(ctx, e.rw.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, e.rw.URL, bytes.NewReader(body))
	if err != nil {
		return err
	}
	for k, vs := range e.rw.Header {
		for _, v := range vs {
			req.Header.Add(k, v)
		}
	}
	req.Header.Set("Content-Encoding", "snappy")
	req.Header.Set("Content-Type", "application/x-protobuf")
	req.Header.Set("X-Prometheus-Remote-Write-Version", "0.1.0")
	req.Header.Set("User-Agent", "fsctl-blast")
	resp, err := e.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 256))
		return fmt.Errorf("%s answered %s: %s", e.rep.URL, resp.Status, strings.TrimSpace(string(msg)))
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	return nil
}
