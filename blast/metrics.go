package blast

import (
	"context"
	"net/http"
	"slices"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/fsctl/fsctl/internal/contract/outcome"
	"github.com/fsctl/fsctl/loadgen"
)

// The metric families fsctl blast pushes with --metrics-remote-write. A Grafana dashboard is
// written against these names: renaming one breaks it (MetricNames lists the series).
const (
	// MetricRequests counts answers by outcome, the report's classification (label outcome).
	MetricRequests = "fsctl_blast_requests_total"
	// MetricDuration is a classic histogram of the report's latency: from the intended release
	// to the complete answer, so a request that waited for a connection shows that wait.
	MetricDuration = "fsctl_blast_request_duration_seconds"
	// MetricInFlight is the clicks released and not yet settled.
	MetricInFlight = "fsctl_blast_in_flight"
	// MetricBuyers is the buyers this process has prepared.
	MetricBuyers = "fsctl_blast_buyers"
)

// MetricsJob is the job label of every series blast pushes; each also carries burst (the
// release instant, the same in every shard, as blast merge matches shards) and shard ("i/n").
const MetricsJob = "fsctl-blast"

// DurationBuckets are the upper bounds of MetricDuration's buckets, in seconds: 0.5 ms to 10 s.
var DurationBuckets = []float64{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10}

// MetricNames are the names of the series blast pushes, as a remote-write receiver stores them
// (the histogram as its _bucket, _sum and _count series), sorted. They come from converting a
// gather of the real registry, so they cannot drift from what goes out.
func MetricNames() []string {
	m := newMetrics()
	families, err := m.reg.Gather()
	if err != nil {
		panic(err) // the registry is built here from constants: an error is a bug
	}
	var names []string
	for _, s := range toSeries(families, nil, 0) {
		if !slices.Contains(names, s.name()) {
			names = append(names, s.name())
		}
	}
	slices.Sort(names)
	return names
}

// metrics is what one burst records for the remote-write push, on a registry of its own.
type metrics struct {
	reg      *prometheus.Registry
	requests *prometheus.CounterVec
	// outcomes holds a counter for every outcome the report knows, made before the release and
	// only read after: recording is a map read and two atomic adds, no lock, no allocation.
	outcomes map[outcome.Code]prometheus.Counter
	duration prometheus.Histogram
	inFlight prometheus.Gauge
	buyers   prometheus.Gauge
}

func newMetrics() *metrics {
	m := &metrics{
		reg: prometheus.NewRegistry(),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{Name: MetricRequests,
			Help: "Answers of the burst by outcome, as the report classifies them."}, []string{"outcome"}),
		duration: prometheus.NewHistogram(prometheus.HistogramOpts{Name: MetricDuration, Buckets: DurationBuckets,
			Help: "Latency of each request from the intended release to the complete answer."}),
		inFlight: prometheus.NewGauge(prometheus.GaugeOpts{Name: MetricInFlight,
			Help: "Clicks released and not yet settled."}),
		buyers: prometheus.NewGauge(prometheus.GaugeOpts{Name: MetricBuyers,
			Help: "Buyers this process has prepared."}),
		outcomes: map[outcome.Code]prometheus.Counter{},
	}
	m.reg.MustRegister(m.requests, m.duration, m.inFlight, m.buyers)
	// Every known outcome starts at 0 before the release, so increase() and rate() see the
	// first answers of each instead of a series that appears already counted.
	for _, c := range loadgen.Outcomes() {
		m.outcomes[c] = m.requests.WithLabelValues(string(c))
	}
	return m
}

// observe records one settled attempt: its outcome and its latency.
func (m *metrics) observe(r *loadgen.Record) {
	c, ok := m.outcomes[r.Outcome]
	if !ok { // an outcome a custom journey invented: counted too, at the cost of a lookup
		c = m.requests.WithLabelValues(string(r.Outcome))
	}
	c.Inc()
	m.duration.Observe(r.Latency().Seconds())
}

// observed is a journey that records every attempt of the journey it wraps as it settles, so
// the counts move during the burst. It only runs on the http engine: the raw engine sends
// prepared bytes and calls no journey, but Plan.Settled instead.
type observed struct {
	journey loadgen.Journey
	m       *metrics
}

// Prepare prepares the wrapped journey's click; the attempt it returns records what it settled.
func (o observed) Prepare(p loadgen.Plan, b loadgen.Buyer, key, token string) (loadgen.Attempt, error) {
	attempt, err := o.journey.Prepare(p, b, key, token)
	if err != nil {
		return nil, err
	}
	m := o.m
	return func(ctx context.Context, c *http.Client, rec *loadgen.Record) {
		attempt(ctx, c, rec)
		m.observe(rec)
	}, nil
}
