package gameday

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"strings"
	"time"

	"github.com/fsctl/fsctl/internal/checkout/payment/fake"
	"github.com/fsctl/fsctl/internal/contract/finding"
	"github.com/fsctl/fsctl/internal/harness/netfault"
	"github.com/fsctl/fsctl/internal/harness/stack"
	"github.com/fsctl/fsctl/internal/platform/kafkaconn"
	"github.com/fsctl/fsctl/preflight"
)

func (r *run) startServers(ctx context.Context) (string, error) {
	sc := r.cfg.Scenario
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	provider := fake.New(fake.Config{Latency: 20 * time.Millisecond, Seed: int64(sc.Seed)}, time.Now)
	pctx, stop := context.WithCancel(context.WithoutCancel(ctx))
	done := make(chan struct{})
	go func() { _ = provider.Serve(pctx, ln); close(done) }()
	r.stopPayment = func() { stop(); <-done }
	r.env.PaymentURL = "http://" + ln.Addr().String()
	e, err := r.proxied(r.env.Endpoints)
	if err != nil {
		return "", err
	}
	args := []string{
		"--redis-url", e.RedisURL, "--postgres-url", e.PostgresURL, "--kafka-brokers", strings.Join(e.KafkaBrokers, ","),
		// The fleet checks the HS256 tokens the game day mints, whatever FSCTL_JWKS_URL the shell has.
		"--jwt-secret", string(r.cfg.JWTSecret), "--jwks-url", "", "--payment-url", r.env.PaymentURL,
		"--payment-timeout", "1s", "--breaker-open", "1s",
		"--expiry-interval", "250ms", "--sweep-interval", "500ms", "--orphan-age", "2s", "--claim-timeout", "3s",
		// As long as the fleet waits for an instance to get ready: one started while a fault holds a
		// store down (a broker's JVM takes 15-25 s to start again on a busy 2-core box) joins late
		// rather than exiting.
		"--start-wait", "60s",
	}
	fleet, err := newFleet(r.cfg.Fsctl, args, r.cfg.WorkDir, r.note)
	if err != nil {
		return "", err
	}
	r.env.Fleet = fleet
	if r.cfg.OnFleet != nil {
		r.cfg.OnFleet(fleet)
	}
	for range sc.Servers {
		if _, err := fleet.Start(ctx, 0); err != nil {
			return "", err
		}
	}
	if r.cfg.Timeline != nil {
		if err := r.cfg.Timeline.Start(ctx, r.t0, fleet.URLs()); err != nil {
			r.note("timeline source did not start: %v", err)
		} else {
			r.timelineOn = true
		}
	}
	return fmt.Sprintf("%d instance(s) behind %s; payment provider %s", sc.Servers, fleet.URL(), r.env.PaymentURL), nil
}

// preflight runs the checklist (with its safe fixes) until the sale is ready: on a fresh stack the
// servers' consumers take a few seconds to join their group, so a failure is retried for a while.
func (r *run) preflight(ctx context.Context) (string, error) {
	e := r.env.Endpoints
	deadline := r.cfg.Now().Add(30 * time.Second)
	for {
		rep, err := preflight.Run(ctx, preflight.Config{
			SaleID: r.cfg.Scenario.Sale.ID, RedisURL: e.RedisURL, PostgresURL: e.PostgresURL, Kafka: kafkaconn.EnvFor(e.KafkaBrokers),
			Servers: r.env.Fleet.URLs(), PaymentTimeout: time.Second, Fix: true,
		})
		if err != nil {
			return "", err
		}
		var b strings.Builder
		_ = rep.Render(&b, false)
		r.rep.Preflight = b.String()
		summary := fmt.Sprintf("%d passed, %d warnings, %d failed", rep.Count(finding.Pass), rep.Count(finding.Warn), rep.Count(finding.Fail))
		if rep.Ready(false) {
			group, err := r.waitConsumers(ctx, len(r.env.Fleet.Live()), 60*time.Second)
			if err != nil {
				return "", err
			}
			return "READY: " + summary + "; " + group, nil
		}
		if r.cfg.Now().After(deadline) {
			fmt.Fprint(r.out, b.String())
			return "", fmt.Errorf("NOT READY: %s", summary)
		}
		if err := sleep(ctx, time.Second); err != nil {
			return "", err
		}
	}
}

// proxied puts a Toxiproxy proxy, of a server run in this process, between the checkout
// instances and each service a step's net-delay, net-partition or toxic names, and returns the
// endpoints the instances get. The
// game day's own reads (settle, reconcile, the rebuild) keep the direct ones, as an operator's
// would on another path.
func (r *run) proxied(e stack.Endpoints) (stack.Endpoints, error) {
	for _, st := range r.cfg.Scenario.Steps {
		nf, ok := st.Fault.(netFault)
		if ok && nf.Proxy != "" {
			return e, fmt.Errorf("step (line %d) toxic: proxy %s names a proxy of your own Toxiproxy, which only `fsctl gameday drill --toxiproxy` drives; the local game day's toxics name a service (redis or postgres)", st.Line, nf.Proxy)
		}
		if !ok || r.env.Proxies[nf.Service] != nil {
			continue
		}
		target := &e.PostgresURL
		if nf.Service == stack.Redis {
			if r.stack.RedisCluster.Masters > 0 {
				return e, fmt.Errorf("step (line %d) %s: no proxy can stand in front of a Redis Cluster (its clients follow MOVED to the nodes' own addresses)", st.Line, nf.Name())
			}
			target = &e.RedisURL
		}
		u, err := url.Parse(*target)
		if err != nil {
			return e, fmt.Errorf("%s address: %w", nf.Service, err)
		}
		if r.env.Toxiproxy == nil {
			if r.env.Toxiproxy, err = netfault.Local(); err != nil {
				return e, err
			}
			r.env.Proxies = map[string]*netfault.Proxy{}
		}
		px, err := r.env.Toxiproxy.Create(nf.Service, "127.0.0.1:0", u.Host)
		if err != nil {
			return e, err
		}
		r.env.Proxies[nf.Service] = px
		u.Host = px.Listen
		*target = u.String()
		r.note("network proxy for %s (toxiproxy %s): %s -> %s", nf.Service, r.env.Toxiproxy.URL, px.Listen, px.Upstream)
	}
	return e, nil
}
