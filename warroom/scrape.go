package warroom

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strings"
	"sync"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// purchaseRoute is the route label of the purchase endpoint in the request histogram.
const purchaseRoute = "/purchase"

// Scraper reads the /metrics of one or more checkout servers and feeds the traffic, admission and
// payment panels. One scrape serves all three within MaxAge, so a refresh scrapes each server once.
type Scraper struct {
	urls   []string
	sale   string
	client *http.Client
	maxAge time.Duration
	now    func() time.Time

	mu   sync.Mutex
	at   time.Time
	last []map[string]*dto.MetricFamily
	errs []error
}

// NewScraper returns a Scraper of the given server base URLs (http://host:port), whose fsctl
// metrics are at path (a profile's http.metrics: fsctl serve's /metrics), for one sale.
func NewScraper(servers []string, path, saleID string, client *http.Client) *Scraper {
	if client == nil {
		client = &http.Client{}
	}
	urls := make([]string, len(servers))
	for i, s := range servers {
		urls[i] = strings.TrimSuffix(s, "/") + path
	}
	return &Scraper{urls: urls, sale: saleID, client: client, maxAge: 100 * time.Millisecond, now: time.Now}
}

// scrape returns every server's metric families (nil for a server that failed), scraping again
// when the last scrape is older than maxAge. It fails only when no server answered.
func (s *Scraper) scrape(ctx context.Context) ([]map[string]*dto.MetricFamily, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.at.IsZero() && s.now().Sub(s.at) < s.maxAge {
		return s.last, s.result()
	}
	fams := make([]map[string]*dto.MetricFamily, len(s.urls))
	errs := make([]error, len(s.urls))
	var wg sync.WaitGroup
	for i, u := range s.urls {
		wg.Go(func() { fams[i], errs[i] = s.fetch(ctx, u) })
	}
	wg.Wait()
	s.at, s.last, s.errs = s.now(), fams, errs
	return fams, s.result()
}

func (s *Scraper) result() error {
	var failed []error
	for _, e := range s.errs {
		if e != nil {
			failed = append(failed, e)
		}
	}
	if len(failed) == len(s.urls) {
		return errors.Join(failed...)
	}
	return nil
}

func (s *Scraper) fetch(ctx context.Context, url string) (map[string]*dto.MetricFamily, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := s.client.Do(req)
	if err != nil {
		return nil, err // *url.Error names the address
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("scrape %s: %s", url, resp.Status)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("parse %s: %w", url, err)
	}
	return fams, nil
}

// Traffic sums the purchase outcomes and the purchase route's latency histogram over the servers.
func (s *Scraper) Traffic(ctx context.Context) (Traffic, error) {
	fams, err := s.scrape(ctx)
	if err != nil {
		return Traffic{}, err
	}
	t := Traffic{Outcomes: map[string]float64{}, ServersTotal: len(fams)}
	for _, f := range fams {
		if f == nil {
			continue
		}
		t.Servers++
		addByLabel(t.Outcomes, f["fsctl_purchase_outcomes_total"], "outcome")
		for _, m := range metrics(f["fsctl_http_request_duration_seconds"]) {
			if strings.Contains(label(m, "route"), purchaseRoute) && m.GetHistogram() != nil {
				addHistogram(&t.Latency, m.GetHistogram())
			}
		}
	}
	return t, nil
}

// Admission reads the sale's waiting-room gauges (every server exports the shared room's state;
// the largest is the freshest) and sums the admissions of every server.
func (s *Scraper) Admission(ctx context.Context) (Admission, error) {
	fams, err := s.scrape(ctx)
	if err != nil {
		return Admission{}, err
	}
	var a Admission
	for _, f := range fams {
		if f == nil {
			continue
		}
		a.QueueDepth = math.Max(a.QueueDepth, s.saleValue(f, "fsctl_room_queue_depth"))
		a.Active = math.Max(a.Active, s.saleValue(f, "fsctl_room_active"))
		a.Rate = math.Max(a.Rate, s.saleValue(f, "fsctl_room_admission_rate"))
		a.WaitSeconds = math.Max(a.WaitSeconds, s.saleValue(f, "fsctl_room_estimated_wait_seconds"))
		a.AdmittedTotal += s.saleValue(f, "fsctl_room_admitted_total")
	}
	return a, nil
}

// Payment reads the worst breaker state and sums the pay outcomes over the servers.
func (s *Scraper) Payment(ctx context.Context) (Payment, error) {
	fams, err := s.scrape(ctx)
	if err != nil {
		return Payment{}, err
	}
	p := Payment{Outcomes: map[string]float64{}}
	worst := 0.0
	for _, f := range fams {
		if f == nil {
			continue
		}
		addByLabel(p.Outcomes, f["fsctl_payments_total"], "outcome")
		for _, m := range metrics(f["fsctl_payment_breaker_state"]) {
			worst = math.Max(worst, value(m))
		}
	}
	p.Breaker = [...]string{"closed", "half-open", "open"}[int(min(max(worst, 0), 2))]
	return p, nil
}

func (s *Scraper) saleValue(f map[string]*dto.MetricFamily, name string) float64 {
	for _, m := range metrics(f[name]) {
		if label(m, "sale") == s.sale {
			return value(m)
		}
	}
	return 0
}

func metrics(f *dto.MetricFamily) []*dto.Metric {
	if f == nil {
		return nil
	}
	return f.GetMetric()
}

func label(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

func value(m *dto.Metric) float64 {
	switch {
	case m.GetCounter() != nil:
		return m.GetCounter().GetValue()
	case m.GetGauge() != nil:
		return m.GetGauge().GetValue()
	case m.GetUntyped() != nil:
		return m.GetUntyped().GetValue()
	}
	return 0
}

func addByLabel(out map[string]float64, f *dto.MetricFamily, name string) {
	for _, m := range metrics(f) {
		out[label(m, name)] += value(m)
	}
}

// addHistogram adds p's finite buckets to h (the +Inf bucket is h.Count, and JSON has no +Inf).
func addHistogram(h *Histogram, p *dto.Histogram) {
	var bs []*dto.Bucket
	for _, b := range p.GetBucket() {
		if !math.IsInf(b.GetUpperBound(), 1) {
			bs = append(bs, b)
		}
	}
	if len(h.Bounds) == 0 {
		for _, b := range bs {
			h.Bounds = append(h.Bounds, b.GetUpperBound())
		}
		h.Counts = make([]float64, len(bs))
	}
	if len(bs) != len(h.Bounds) {
		return // a server with other buckets cannot be summed bucket by bucket
	}
	for i, b := range bs {
		h.Counts[i] += float64(b.GetCumulativeCount())
	}
	h.Count += float64(p.GetSampleCount())
	h.Sum += p.GetSampleSum()
}
