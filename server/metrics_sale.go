package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/fsctl/fsctl/internal/checkout/ingest"
	"github.com/fsctl/fsctl/internal/checkout/stock"
	"github.com/fsctl/fsctl/internal/contract/sale"
	"github.com/fsctl/fsctl/internal/platform/kafkaconn"
)

// PurchaseRoute is the route label of the purchase endpoint in fsctl_http_request_duration_seconds:
// what a dashboard's or an alert's latency query selects.
const PurchaseRoute = "POST /api/v1/sales/{sale}/items/{item}/purchase"

// ExpiringWithin is the window of fsctl_holds_expiring: holds whose expiry falls this soon.
const ExpiringWithin = 60 * time.Second

// The gauges below are read from Redis and Kafka when /metrics is scraped, at most once per
// scrapeCache however many scrapers ask, and within their timeout (a slow store leaves them out
// of that scrape rather than stalling it).
const (
	scrapeCache    = time.Second
	stockTimeout   = time.Second
	consumeTimeout = 2 * time.Second
	readyTimeout   = 2 * time.Second
)

var (
	stockUnitsDesc = prometheus.NewDesc("fsctl_stock_units",
		"Units on sale in a shard's Redis stock counter, for the sales this instance has served (read on scrape).",
		[]string{"sale", "item", "shard"}, nil)
	holdsActiveDesc = prometheus.NewDesc("fsctl_holds_active",
		"Live holds (reserved, neither paid nor released) of an item in Redis, over its shards.",
		[]string{"sale", "item"}, nil)
	holdsExpiringDesc = prometheus.NewDesc("fsctl_holds_expiring",
		"Live holds of an item whose expiry falls within the next 60 s: units likely back on sale soon.",
		[]string{"sale", "item"}, nil)
	holdsOverdueDesc = prometheus.NewDesc("fsctl_holds_overdue",
		"Live holds of an item already past their expiry that the expiry job has not released yet.",
		[]string{"sale", "item"}, nil)
	consumerLagDesc = prometheus.NewDesc("fsctl_consumer_lag",
		"Order events the consumer group has not committed yet, per partition (end offset minus committed offset); exported by instances running the consumer role.",
		[]string{"topic", "group", "partition"}, nil)
	deadLetterDesc = prometheus.NewDesc("fsctl_dead_letter_messages",
		"Messages on the dead-letter topic (all partitions); exported by instances running the consumer role.",
		[]string{"topic"}, nil)
	readyDesc = prometheus.NewDesc("fsctl_ready",
		"1 while a /readyz check (redis, postgres, kafka) passes, 0 while it fails.",
		[]string{"check"}, nil)
)

// saleStock is what the stock and hold gauges read; *stock.Store implements it.
type saleStock interface {
	Snapshot(ctx context.Context, saleID string, items []sale.Item) ([]stock.ItemState, error)
	Client() redis.UniversalClient
}

// orderPipeline names the consumer group whose lag, and the dead-letter topic whose size, an
// instance running the consumer role exports.
type orderPipeline struct {
	kafka                  kafkaconn.Conn
	topic, deadLetterTopic string
	group                  string
}

// watchSale registers the gauges of the sale's state: stock and holds of the sales this instance
// has served (from st), the order consumer's lag and dead letters (pipe; nil when this instance
// runs no consumer) and the readiness checks. Each is registered even without its source, so
// MetricNames lists it.
func (s *Server) watchSale(st saleStock, pipe *orderPipeline) {
	s.metrics.reg.MustRegister(
		s.onScrape("stock", stockTimeout, []*prometheus.Desc{stockUnitsDesc, holdsActiveDesc, holdsExpiringDesc, holdsOverdueDesc},
			func(ctx context.Context) ([]prometheus.Metric, error) { return s.readStock(ctx, st) }),
		s.onScrape("consumer", consumeTimeout, []*prometheus.Desc{consumerLagDesc, deadLetterDesc},
			func(ctx context.Context) ([]prometheus.Metric, error) { return pipe.read(ctx) }),
		s.onScrape("ready", readyTimeout, []*prometheus.Desc{readyDesc}, s.readReady),
	)
}

// watchSale exports the sale's gauges of an assembled checkout; the pipeline's only where this
// process runs the consumer.
func (a *App) watchSale() {
	var pipe *orderPipeline
	if a.consumer != nil {
		group := a.cfg.ConsumerGroup
		if group == "" {
			group = ingest.DefaultConfig(kafkaconn.Conn{}).GroupID
		}
		pipe = &orderPipeline{kafka: a.cfg.Kafka, topic: a.cfg.OrdersTopic, deadLetterTopic: a.cfg.DeadLetterTopic, group: group}
	}
	a.Server.watchSale(a.Stock, pipe)
}

// scrapeCollector is a prometheus.Collector that reads its metrics when scraped and keeps them for
// scrapeCache: concurrent scrapes wait for one read instead of each reading the store again.
type scrapeCollector struct {
	name    string
	descs   []*prometheus.Desc
	timeout time.Duration
	read    func(ctx context.Context) ([]prometheus.Metric, error)
	log     *slog.Logger

	mu   sync.Mutex
	at   time.Time
	last []prometheus.Metric
}

func (s *Server) onScrape(name string, timeout time.Duration, descs []*prometheus.Desc, read func(context.Context) ([]prometheus.Metric, error)) *scrapeCollector {
	return &scrapeCollector{name: name, descs: descs, timeout: timeout, read: read, log: s.log}
}

// Describe implements prometheus.Collector.
func (c *scrapeCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range c.descs {
		ch <- d
	}
}

// Collect implements prometheus.Collector. A read that fails still exports what it got.
func (c *scrapeCollector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	defer c.mu.Unlock()
	// Real elapsed time, not the server's clock: a test's frozen clock must not freeze the gauges.
	if c.at.IsZero() || time.Since(c.at) >= scrapeCache {
		ctx, cancel := context.WithTimeout(context.Background(), c.timeout)
		ms, err := c.read(ctx)
		cancel()
		if err != nil {
			c.log.Warn("metrics read on scrape failed; its gauges are missing or partial this scrape", "source", c.name, "err", err)
		}
		c.at, c.last = time.Now(), ms
	}
	for _, m := range c.last {
		ch <- m
	}
}

// readStock reads the stock counter of every shard and the holds of every item of the sales the
// read model holds (the sales this instance has served), a few pipelined round trips per sale.
func (s *Server) readStock(ctx context.Context, st saleStock) ([]prometheus.Metric, error) {
	if st == nil {
		return nil, nil
	}
	now := s.now()
	var out []prometheus.Metric
	var errs []error
	for _, sl := range s.catalog.sales() {
		states, err := st.Snapshot(ctx, sl.ID, sl.Items)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		overdue, expiring, err := holdsDue(ctx, st.Client(), sl, now)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for i, it := range states {
			for _, sh := range it.Shards {
				out = append(out, prometheus.MustNewConstMetric(stockUnitsDesc, prometheus.GaugeValue, float64(sh.Stock), sl.ID, it.ItemID, strconv.Itoa(sh.Shard)))
			}
			out = append(out,
				prometheus.MustNewConstMetric(holdsActiveDesc, prometheus.GaugeValue, float64(it.Holds), sl.ID, it.ItemID),
				prometheus.MustNewConstMetric(holdsExpiringDesc, prometheus.GaugeValue, float64(expiring[i]), sl.ID, it.ItemID),
				prometheus.MustNewConstMetric(holdsOverdueDesc, prometheus.GaugeValue, float64(overdue[i]), sl.ID, it.ItemID))
		}
	}
	return out, errors.Join(errs...)
}

// holdsDue counts, per item of sl (over its shards), the holds already past their expiry and the
// ones expiring within ExpiringWithin of now, in one pipelined round trip over the holds sets
// (scored by expiry in Unix milliseconds).
func holdsDue(ctx context.Context, rdb redis.UniversalClient, sl sale.Sale, now time.Time) (overdue, expiring []int64, err error) {
	nowMS := strconv.FormatInt(now.UnixMilli(), 10)
	soonMS := strconv.FormatInt(now.Add(ExpiringWithin).UnixMilli(), 10)
	pipe := rdb.Pipeline()
	type due struct{ overdue, expiring *redis.IntCmd }
	cmds := make([][]due, len(sl.Items))
	for i, it := range sl.Items {
		for k := range it.ShardCount() {
			key := stock.ShardKeys(sl.ID, it.ID, k, it.ShardCount()).Holds()
			cmds[i] = append(cmds[i], due{pipe.ZCount(ctx, key, "-inf", "("+nowMS), pipe.ZCount(ctx, key, nowMS, soonMS)})
		}
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return nil, nil, fmt.Errorf("count due holds of sale %s: %w", sl.ID, err)
	}
	overdue, expiring = make([]int64, len(sl.Items)), make([]int64, len(sl.Items))
	for i := range cmds {
		for _, c := range cmds[i] {
			overdue[i] += c.overdue.Val()
			expiring[i] += c.expiring.Val()
		}
	}
	return overdue, expiring, nil
}

// sales returns the sales the read model holds, by id.
func (c *catalog) sales() []sale.Sale {
	c.mu.Lock()
	out := make([]sale.Sale, 0, len(c.entries))
	for _, e := range c.entries {
		out = append(out, e.sale)
	}
	c.mu.Unlock()
	slices.SortFunc(out, func(a, b sale.Sale) int { return strings.Compare(a.ID, b.ID) })
	return out
}

// read reads the consumer group's lag per partition and the dead-letter topic's size, with admin
// requests on a client of its own (closed after: a read a second at most is not worth pooling).
func (p *orderPipeline) read(ctx context.Context) ([]prometheus.Metric, error) {
	if p == nil {
		return nil, nil
	}
	c, closeIdle, err := kafkaconn.NewClient(p.kafka, consumeTimeout)
	if err != nil {
		return nil, err
	}
	defer closeIdle()
	var out []prometheus.Metric
	var errs []error
	g, err := kafkaconn.GroupLag(ctx, c, p.topic, p.group)
	if err != nil {
		errs = append(errs, err)
	}
	for _, pl := range g.Partitions {
		out = append(out, prometheus.MustNewConstMetric(consumerLagDesc, prometheus.GaugeValue, float64(pl.Lag), p.topic, p.group, strconv.Itoa(pl.Partition)))
	}
	if p.deadLetterTopic != "" {
		offs, err := kafkaconn.TopicOffsets(ctx, c, p.deadLetterTopic)
		if err != nil {
			errs = append(errs, err)
		} else {
			out = append(out, prometheus.MustNewConstMetric(deadLetterDesc, prometheus.GaugeValue, float64(offs.Messages()), p.deadLetterTopic))
		}
	}
	return out, errors.Join(errs...)
}

// readReady runs the /readyz checks, in parallel.
func (s *Server) readReady(ctx context.Context) ([]prometheus.Metric, error) {
	var mu sync.Mutex
	var wg sync.WaitGroup
	var out []prometheus.Metric
	for name, probe := range s.probes {
		wg.Go(func() {
			v := 1.0
			if probe(ctx) != nil {
				v = 0
			}
			mu.Lock()
			out = append(out, prometheus.MustNewConstMetric(readyDesc, prometheus.GaugeValue, v, name))
			mu.Unlock()
		})
	}
	wg.Wait()
	return out, nil
}

// MetricNames lists every metric family a checkout instance exports on /metrics once all its
// roles run, sorted: what a dashboard or an alert rule may select.
func MetricNames() []string { return slices.Sorted(maps.Keys(MetricLabels())) }

// descName, descConst and descLabels read a prometheus.Desc's name, constant labels and variable
// labels from its String(): the client library keeps them unexported.
var (
	descName   = regexp.MustCompile(`fqName: "([^"]+)"`)
	descConst  = regexp.MustCompile(`constLabels: \{(.*)\}, variableLabels`)
	constName  = regexp.MustCompile(`([a-zA-Z_][a-zA-Z0-9_]*)="`)
	descLabels = regexp.MustCompile(`variableLabels: \{([^}]*)\}`)
)

// MetricLabels maps every metric family a checkout instance exports on /metrics once all its roles
// run to its labels (a histogram's le and a target's job and instance not included). It
// describes a server's registry after registering everything New, Serve and Open register, rather
// than gathering it: a vector without children would be missing from a gather.
func MetricLabels() map[string][]string {
	s := New(DefaultConfig(), Deps{})
	s.metrics.watchAdmission(&admission{}) // Serve registers it once it listens
	s.watchSale(nil, nil)                  // Open registers it with the stores
	ch := make(chan *prometheus.Desc)
	go func() {
		s.metrics.reg.Describe(ch)
		close(ch)
	}()
	out := map[string][]string{}
	for d := range ch {
		str := d.String()
		m := descName.FindStringSubmatch(str)
		if m == nil {
			continue
		}
		var labels []string
		if c := descConst.FindStringSubmatch(str); c != nil {
			for _, l := range constName.FindAllStringSubmatch(c[1], -1) {
				labels = append(labels, l[1])
			}
		}
		if l := descLabels.FindStringSubmatch(str); l != nil && l[1] != "" {
			for _, name := range strings.Split(l[1], ",") {
				labels = append(labels, strings.TrimSuffix(strings.TrimPrefix(name, "c("), ")"))
			}
		}
		out[m[1]] = labels
	}
	return out
}
