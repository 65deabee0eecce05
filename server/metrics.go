package server

import (
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/fsctl/fsctl/internal/checkout/ingest"
	"github.com/fsctl/fsctl/internal/checkout/lifecycle"
	"github.com/fsctl/fsctl/internal/contract/sale"
)

// metrics are the server's Prometheus instruments, on a registry of its own so that several
// servers can live in one test process.
type metrics struct {
	reg            *prometheus.Registry
	outcomes       *prometheus.CounterVec
	requests       *prometheus.HistogramVec
	reserve        prometheus.Histogram
	publish        prometheus.Histogram
	released       *prometheus.CounterVec
	persisted      prometheus.Counter
	duplicates     prometheus.Counter
	deadLettered   *prometheus.CounterVec
	stale          prometheus.Counter
	consumerBatch  prometheus.Histogram
	consumerErrors prometheus.Counter
	payments       *prometheus.CounterVec
	breakerState   prometheus.Gauge
	soldOutFlag    prometheus.Counter
	borrowed       prometheus.Counter
	waitShort      *prometheus.CounterVec
	replayHandOffs prometheus.Counter
	unconfirmed    prometheus.Counter
	pastDeadline   prometheus.Counter
	republished    prometheus.Counter
	repaired       prometheus.Counter
	paidRecorded   prometheus.Counter
	roomDepth      *prometheus.GaugeVec
	roomActive     *prometheus.GaugeVec
	roomRate       *prometheus.GaugeVec
	roomWait       *prometheus.GaugeVec
	roomAdmitted   *prometheus.CounterVec
	roomExpired    *prometheus.CounterVec
	failOpen       prometheus.Counter
	rateLimited    *prometheus.CounterVec
	shed           *prometheus.CounterVec
}

// latencyBuckets are the buckets of the latency histograms, in seconds.
var latencyBuckets = []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5}

// newMetrics makes and registers the instruments, one subject at a time.
func newMetrics() *metrics {
	m := &metrics{reg: prometheus.NewRegistry()}
	m.registerPurchase()
	m.registerHandOff()
	m.registerHolds()
	m.registerConsumer()
	m.registerPayment()
	m.registerRoom()
	m.registerLimits()
	m.reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// registerPurchase: the answers and latency of purchases and of the HTTP routes, and the reserve.
func (m *metrics) registerPurchase() {
	m.outcomes = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "fsctl_purchase_outcomes_total", Help: "Purchase answers by outcome code.",
	}, []string{"outcome"})
	m.requests = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "fsctl_http_request_duration_seconds", Help: "HTTP request latency by route and status.", Buckets: latencyBuckets,
	}, []string{"route", "status"})
	m.reserve = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name: "fsctl_reserve_duration_seconds", Help: "Latency of the Redis reserve script call.", Buckets: latencyBuckets,
	})
	m.soldOutFlag = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "fsctl_sold_out_flag_answers_total", Help: "Purchases answered by this instance's local sold-out flag instead of the reserve script.",
	})
	m.borrowed = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "fsctl_shard_units_borrowed_total", Help: "Units moved into a buyer's home shard from other shards.",
	})
	m.pastDeadline = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "fsctl_purchases_past_deadline_total", Help: "Purchases not answered within the purchase deadline: the buyer heard 503 UNAVAILABLE then, while the purchase went on.",
	})
	m.waitShort = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "fsctl_redis_wait_short_total",
		Help: "Reserves that fewer replicas acknowledged than the sale's waitReplicas, by the sale's waitPolicy: count (answered RESERVED) or release (released, buyer told to retry).",
	}, []string{"policy"})
	for _, p := range []string{sale.WaitPolicyCount, sale.WaitPolicyRelease} {
		m.waitShort.WithLabelValues(p) // both series from the start, as the unlabelled counter was
	}
	m.reg.MustRegister(m.outcomes, m.requests, m.reserve, m.soldOutFlag, m.borrowed, m.pastDeadline, m.waitShort)
}

// registerHandOff: the hand-off of a reservation to Kafka and its confirmation.
func (m *metrics) registerHandOff() {
	m.publish = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name: "fsctl_publish_duration_seconds", Help: "Latency of publishing OrderPlaced with acks=all.", Buckets: latencyBuckets,
	})
	m.replayHandOffs = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "fsctl_replay_handoffs_total", Help: "Replayed RESERVED answers whose order was handed to Kafka again before the buyer heard yes.",
	})
	m.unconfirmed = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "fsctl_handoffs_unconfirmed_total", Help: "Hand-offs Kafka acknowledged whose Redis state a rebuild replaced (or Redis could not confirm) before the buyer heard yes; answered 503.",
	})
	m.reg.MustRegister(m.publish, m.replayHandOffs, m.unconfirmed)
}

// registerHolds: holds returned to stock, and the orphan sweeper's work.
func (m *metrics) registerHolds() {
	m.released = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "fsctl_holds_released_total", Help: "Holds returned to stock, by reason.",
	}, []string{"reason"})
	m.republished = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "fsctl_orphans_republished_total", Help: "Holds with no order in PostgreSQL whose OrderPlaced the sweeper published again.",
	})
	m.repaired = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "fsctl_holds_repaired_total", Help: "Holds of closed or paid orders the sweeper released or settled.",
	})
	m.reg.MustRegister(m.released, m.republished, m.repaired)
}

// registerConsumer: the Kafka consumer that records order events in PostgreSQL.
func (m *metrics) registerConsumer() {
	m.persisted = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "fsctl_orders_persisted_total", Help: "Orders the consumer recorded in PostgreSQL.",
	})
	m.duplicates = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "fsctl_orders_duplicate_total", Help: "Redelivered order events that changed nothing.",
	})
	m.deadLettered = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "fsctl_orders_dead_lettered_total", Help: "Order events sent to the dead-letter topic, by reason.",
	}, []string{"reason"})
	m.stale = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "fsctl_orders_stale_dropped_total", Help: "OrderPlaced events dropped because their hold had already ended (a hand-off reported failed but delivered).",
	})
	m.consumerBatch = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name: "fsctl_consumer_batch_size", Help: "Orders per consumer transaction.", Buckets: prometheus.ExponentialBuckets(1, 2, 11),
	})
	m.consumerErrors = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "fsctl_consumer_retries_total", Help: "Consumer steps that failed and were retried.",
	})
	m.paidRecorded = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "fsctl_orders_paid_recorded_total", Help: "Payments the consumer recorded in PostgreSQL (OrderPaid events).",
	})
	m.reg.MustRegister(m.persisted, m.duplicates, m.deadLettered, m.stale, m.consumerBatch, m.consumerErrors, m.paidRecorded)
}

// registerPayment: the pay endpoint and its circuit breaker.
func (m *metrics) registerPayment() {
	m.payments = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "fsctl_payments_total", Help: "Answers of the pay endpoint, by outcome code.",
	}, []string{"outcome"})
	m.breakerState = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "fsctl_payment_breaker_state", Help: "Payment circuit breaker: 0 closed, 1 half-open, 2 open.",
	})
	m.reg.MustRegister(m.payments, m.breakerState)
}

// registerRoom: the waiting rooms, per sale.
func (m *metrics) registerRoom() {
	m.roomDepth = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "fsctl_room_queue_depth", Help: "Buyers waiting in the sale's queue.",
	}, []string{"sale"})
	m.roomActive = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "fsctl_room_active", Help: "Admitted buyers still active (their slot not yet freed).",
	}, []string{"sale"})
	m.roomRate = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "fsctl_room_admission_rate", Help: "Configured admissions per second.",
	}, []string{"sale"})
	m.roomWait = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "fsctl_room_estimated_wait_seconds", Help: "Estimated wait of the last buyer in the queue: depth / admission rate.",
	}, []string{"sale"})
	m.roomAdmitted = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "fsctl_room_admitted_total", Help: "Buyers this instance's admission rounds let through.",
	}, []string{"sale"})
	m.roomExpired = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "fsctl_room_expired_total", Help: "Waiters and admitted buyers dropped for not polling, by kind.",
	}, []string{"sale", "kind"})
	m.failOpen = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "fsctl_room_fail_open_total", Help: "Purchases let through without admission because the room was down and the sale fails open.",
	})
	m.reg.MustRegister(m.roomDepth, m.roomActive, m.roomRate, m.roomWait, m.roomAdmitted, m.roomExpired, m.failOpen)
}

// registerLimits: requests refused by rate limits, and connections shed beyond the cap.
func (m *metrics) registerLimits() {
	m.rateLimited = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "fsctl_rate_limited_total", Help: "Requests refused by a sale's rate limits, by endpoint and limit.",
	}, []string{"endpoint", "by"})
	m.shed = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "fsctl_connections_shed_total", Help: "Connections beyond --max-conns: answered 503 OVERLOADED by the shed server, or closed at once beyond --shed-conns.",
	}, []string{"action"})
	m.reg.MustRegister(m.rateLimited, m.shed)
}

// handler serves the registry; OpenMetrics when the scraper asks for it, which carries the
// exemplars (a Prometheus with --enable-feature=exemplar-storage does).
func (m *metrics) handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{EnableOpenMetrics: true})
}

// observeRequest records one request's latency; a request whose trace was kept carries its trace
// id as the observation's exemplar, so a dashboard's latency panel links to a trace of that bucket.
func (m *metrics) observeRequest(route string, status int, took time.Duration, traceID string) {
	o := m.requests.WithLabelValues(route, strconv.Itoa(status))
	if traceID == "" {
		o.Observe(took.Seconds())
		return
	}
	o.(prometheus.ExemplarObserver).ObserveWithExemplar(took.Seconds(), prometheus.Labels{"trace_id": traceID})
}

// buildInfo exports fsctl_build_info{version,commit} = 1: which build an instance runs, in a
// series a dashboard can join to any other.
func (m *metrics) buildInfo(version, commit string) {
	g := prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "fsctl_build_info", Help: "The build this instance runs (always 1): its version and git commit.",
	}, []string{"version", "commit"})
	g.WithLabelValues(version, commit).Set(1)
	m.reg.MustRegister(g)
}

// consumerMetrics adapts the instruments to the consumer's callbacks.
func (m *metrics) consumerMetrics() ingest.Metrics {
	return ingest.Metrics{
		Persisted:  func(n int) { m.persisted.Add(float64(n)) },
		Duplicates: func(n int) { m.duplicates.Add(float64(n)) },
		Paid:       func(n int) { m.paidRecorded.Add(float64(n)) },
		DeadLettered: func(reason string) {
			m.deadLettered.WithLabelValues(reason).Inc()
			if reason != "undecodable" {
				m.released.WithLabelValues("dead_letter").Inc()
			}
		},
		BatchSize: func(n int) { m.consumerBatch.Observe(float64(n)) },
		DBErrors:  func() { m.consumerErrors.Inc() },
		Stale:     func(n int) { m.stale.Add(float64(n)) },
	}
}

// LifecycleMetrics returns callbacks that feed the lifecycle jobs' numbers into /metrics.
func (s *Server) LifecycleMetrics() lifecycle.Metrics {
	m := s.metrics
	return lifecycle.Metrics{
		Released:    func(reason string) { m.released.WithLabelValues(reason).Inc() },
		Republished: func(n int) { m.republished.Add(float64(n)) },
		Repaired:    func(n int) { m.repaired.Add(float64(n)) },
	}
}

// SetBreakerState records the payment circuit breaker's state (0 closed, 1 half-open, 2 open).
func (s *Server) SetBreakerState(v int) { s.metrics.breakerState.Set(float64(v)) }

// watchRoom exports whether this instance can reach the waiting room's state.
func (s *Server) watchRoom() {
	s.metrics.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "fsctl_room_up", Help: "1 while this instance reaches the waiting room's state, 0 while a sale's fail mode applies.",
	}, func() float64 {
		if s.roomUp.Load() {
			return 1
		}
		return 0
	}))
}

// watchAdmission exports how many connections the checkout itself serves now, beside its cap.
func (m *metrics) watchAdmission(a *admission) {
	m.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "fsctl_connections_admitted", Help: "Client connections the checkout serves now (at most --max-conns).",
	}, func() float64 { return float64(a.open()) }))
}
