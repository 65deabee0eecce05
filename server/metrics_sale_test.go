package server_test

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/redis/go-redis/v9"
	"github.com/segmentio/kafka-go"

	"github.com/fsctl/fsctl/internal/checkout/events"
	"github.com/fsctl/fsctl/internal/checkout/stock"
	"github.com/fsctl/fsctl/internal/harness/testenv/eventually"
	"github.com/fsctl/fsctl/internal/platform/kafkaconn"
	"github.com/fsctl/fsctl/server"
)

// TestSaleGaugesShowStockHoldsAndLag sells units of a two-shard item while PostgreSQL keeps the
// consumer from committing, and checks what /metrics says of the sale against Redis and Kafka:
// stock per shard, holds by expiry, consumer lag, dead letters and readiness.
func TestSaleGaugesShowStockHoldsAndLag(t *testing.T) {
	t.Parallel()
	e := newEnvWith(t, envOptions{Quantity: 10, Limit: 1, Shards: 2, HoldTTL: 30 * time.Second})
	ctx := context.Background()
	// A transaction holding the orders table leaves the consumer's batch waiting, so its offsets
	// stay uncommitted: the lag is exactly the orders sold meanwhile.
	tx, err := e.app.Orders.Pool().Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	if _, err := tx.Exec(ctx, "LOCK TABLE orders IN ACCESS EXCLUSIVE MODE"); err != nil {
		t.Fatal(err)
	}
	users := []string{"gauge-a", "gauge-b", "gauge-c"}
	orderOf := map[string]string{}
	for _, u := range users {
		code, body := e.buy(u, "k")
		if code != http.StatusAccepted {
			t.Fatalf("buy %s: %d %s", u, code, body)
		}
		orderOf[u] = orderIDOf(t, body).String()
	}
	snap, err := e.app.Stock.Snapshot(ctx, e.sale.ID, e.sale.Items)
	if err != nil {
		t.Fatal(err)
	}
	item := map[string]string{"sale": e.sale.ID, "item": "hot"}
	lagOf := map[string]string{"topic": e.topic, "group": "g-" + e.topic}
	waitScrape(t, e.base, func(f families) error {
		var errs []string
		for _, sh := range snap[0].Shards {
			errs = f.expect(errs, "fsctl_stock_units", with(item, "shard", strconv.Itoa(sh.Shard)), float64(sh.Stock), 1)
		}
		errs = f.expect(errs, "fsctl_stock_units", item, 7, 2)
		errs = f.expect(errs, "fsctl_holds_active", item, 3, 1)
		errs = f.expect(errs, "fsctl_holds_expiring", item, 3, 1)
		errs = f.expect(errs, "fsctl_holds_overdue", item, 0, 1)
		errs = f.expect(errs, "fsctl_consumer_lag", lagOf, 3, 3) // one series per partition
		errs = f.expect(errs, "fsctl_dead_letter_messages", map[string]string{"topic": e.dlq}, 0, 1)
		for _, check := range []string{"redis", "postgres", "kafka"} {
			errs = f.expect(errs, "fsctl_ready", map[string]string{"check": check}, 1, 1)
		}
		return joinErrs(errs)
	})
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	e.counts(3)
	waitScrape(t, e.base, func(f families) error {
		return joinErrs(f.expect(nil, "fsctl_consumer_lag", lagOf, 0, 3))
	})

	// One hold past its expiry, one expiring within the 60 s window (near its end, so a shorter
	// window fails), one beyond it.
	rdb := e.app.Stock.Client()
	now := time.Now()
	for u, at := range map[string]time.Time{users[0]: now.Add(-time.Second), users[1]: now.Add(50 * time.Second), users[2]: now.Add(5 * time.Minute)} {
		key := stock.ShardKeys(e.sale.ID, "hot", stock.HomeShard(u, 2), 2).Holds()
		n, err := rdb.ZAddXX(ctx, key, redis.Z{Score: float64(at.UnixMilli()), Member: orderOf[u]}).Result()
		if err != nil || n != 0 {
			t.Fatalf("move the hold of %s in %s: %d %v", u, key, n, err)
		}
		if _, err := rdb.ZScore(ctx, key, orderOf[u]).Result(); err != nil {
			t.Fatalf("hold of %s not in %s: %v", u, key, err)
		}
	}
	// An event nobody can decode goes to the dead-letter topic.
	pub, err := events.NewPublisher(kafkaconn.Conn{Brokers: e.brokers}, e.topic)
	if err != nil {
		t.Fatal(err)
	}
	defer pub.Close()
	if err := pub.Publish(ctx, kafka.Message{Key: []byte("garbage"), Value: []byte("not an event")}); err != nil {
		t.Fatal(err)
	}
	waitScrape(t, e.base, func(f families) error {
		var errs []string
		errs = f.expect(errs, "fsctl_holds_active", item, 3, 1)
		errs = f.expect(errs, "fsctl_holds_expiring", item, 1, 1)
		errs = f.expect(errs, "fsctl_holds_overdue", item, 1, 1)
		errs = f.expect(errs, "fsctl_dead_letter_messages", map[string]string{"topic": e.dlq}, 1, 1)
		return joinErrs(errs)
	})
}

// TestMetricNamesCoverTheScrape checks that server.MetricLabels, which the dashboard's test takes
// as the list of what the server exports, names every family and label a live, busy instance
// exports, and that the purchase latency's route label is server.PurchaseRoute.
func TestMetricNamesCoverTheScrape(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 2, 1)
	for i := range 3 { // two reserved, one sold out
		if code, body := e.buy("names-"+strconv.Itoa(i), "k"); code != http.StatusAccepted && code != http.StatusGone {
			t.Fatalf("buy: %d %s", code, body)
		}
	}
	e.counts(2)
	known := server.MetricLabels()
	f := scrape(t, e.base)
	for name, fam := range f {
		labels, ok := known[name]
		if !ok {
			t.Errorf("/metrics exports %s, which server.MetricLabels does not list", name)
			continue
		}
		for _, m := range fam.GetMetric() {
			for _, l := range m.GetLabel() {
				if !slices.Contains(labels, l.GetName()) {
					t.Errorf("%s has label %s, which server.MetricLabels does not list (%v)", name, l.GetName(), labels)
				}
			}
		}
	}
	for _, name := range []string{"fsctl_stock_units", "fsctl_holds_active", "fsctl_consumer_lag", "fsctl_ready"} {
		if f[name] == nil || !slices.Contains(server.MetricNames(), name) {
			t.Errorf("%s: scraped %v, listed %v; want both", name, f[name] != nil, slices.Contains(server.MetricNames(), name))
		}
	}
	if n := f.sum("fsctl_http_request_duration_seconds", map[string]string{"route": server.PurchaseRoute}); n != 3 {
		t.Errorf("%v purchases observed under route %q, want 3", n, server.PurchaseRoute)
	}
}

// families are one scrape of /metrics by name.
type families map[string]*dto.MetricFamily

func scrape(t *testing.T, base string) families {
	t.Helper()
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	p := expfmt.NewTextParser(model.UTF8Validation)
	f, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("parse /metrics: %v", err)
	}
	return f
}

// waitScrape scrapes until check passes (the gauges are cached for a second) or 30 s pass.
func waitScrape(t *testing.T, base string, check func(families) error) {
	t.Helper()
	// A scrape is a whole /metrics page, whose gauges hold for a second: no need to ask more often.
	eventually.OKEvery(t, 30*time.Second, 200*time.Millisecond, func() error { return check(scrape(t, base)) })
}

// match returns the samples of name whose labels include want.
func (f families) match(name string, want map[string]string) []*dto.Metric {
	var out []*dto.Metric
	for _, m := range f[name].GetMetric() {
		ok := true
		for k, v := range want {
			ok = ok && slices.ContainsFunc(m.GetLabel(), func(l *dto.LabelPair) bool { return l.GetName() == k && l.GetValue() == v })
		}
		if ok {
			out = append(out, m)
		}
	}
	return out
}

// sum adds the matching samples: gauge values, or a histogram's observation counts.
func (f families) sum(name string, want map[string]string) float64 {
	var s float64
	for _, m := range f.match(name, want) {
		s += m.GetGauge().GetValue() + float64(m.GetHistogram().GetSampleCount())
	}
	return s
}

// expect appends a complaint to errs unless name has series series matching want, summing to v.
func (f families) expect(errs []string, name string, want map[string]string, v float64, series int) []string {
	if n := len(f.match(name, want)); n != series {
		return append(errs, fmt.Sprintf("%s%v: %d series, want %d", name, want, n, series))
	}
	if got := f.sum(name, want); got != v {
		return append(errs, fmt.Sprintf("%s%v = %v, want %v", name, want, got, v))
	}
	return errs
}

func with(m map[string]string, k, v string) map[string]string {
	out := map[string]string{k: v}
	for mk, mv := range m {
		out[mk] = mv
	}
	return out
}

func joinErrs(errs []string) error {
	if len(errs) == 0 {
		return nil
	}
	return fmt.Errorf("%s", strings.Join(errs, "; "))
}
