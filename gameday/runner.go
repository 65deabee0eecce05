package gameday

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/fsctl/fsctl/blast"
	"github.com/fsctl/fsctl/finding"
	"github.com/fsctl/fsctl/kafkaconn"
	"github.com/fsctl/fsctl/loadgen"
	"github.com/fsctl/fsctl/netfault"
	"github.com/fsctl/fsctl/orders"
	"github.com/fsctl/fsctl/payment/fake"
	"github.com/fsctl/fsctl/pipeline"
	"github.com/fsctl/fsctl/preflight"
	"github.com/fsctl/fsctl/sale"
	"github.com/fsctl/fsctl/stack"
	"github.com/fsctl/fsctl/steps"
	"github.com/fsctl/fsctl/stock"
)

// Teardown says what happens to the stack when the game day ends.
type Teardown string

// Teardown policies.
const (
	// TeardownAuto stops the stack if the game day started any of its services.
	TeardownAuto Teardown = "auto"
	// TeardownAlways stops the stack whatever ran before.
	TeardownAlways Teardown = "always"
	// TeardownNever leaves the stack running.
	TeardownNever Teardown = "never"
)

// stops says whether the stack is stopped at the end of a run, which started some of the stack's
// services if started is true: the one teardown rule of a game day and of a run of several seeds.
func (t Teardown) stops(started bool) bool {
	return t == TeardownAlways || t == TeardownAuto && started
}

// Config is one game-day run.
type Config struct {
	Scenario Scenario
	// Stack is the local stack the run brings up (if needed) and injects its faults into.
	Stack    stack.Config
	Teardown Teardown
	// Fsctl is the binary the checkout instances run as (`fsctl serve`); default this executable.
	Fsctl string
	// WorkDir receives the servers' logs and the blast records; default a temporary folder.
	WorkDir string
	// Out receives the progress lines; nil discards them.
	Out io.Writer
	// JWTSecret signs the buyers' tokens and is given to every instance.
	JWTSecret []byte
	// Timeline, when set, is started once the servers run and stopped after the settle; its
	// events join the report's timeline (the hook for the war room's --records).
	Timeline TimelineSource
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// OnFleet, when set, is handed the fleet as soon as it exists (tests watch its processes).
	OnFleet func(*Fleet)
	// Replay, when set, is the command that draws the run again (a drill's --chaos), printed
	// when it fails.
	Replay string
	// Target, when set, plays the scenario against a running checkout of a team's own instead of
	// the local stack (fsctl gameday drill -f); Stack, Teardown, Fsctl and JWTSecret are
	// then unused.
	Target *Target
	// SoakEvery, above zero, samples every instance's memory, goroutines and open files and
	// Redis's memory and keys this often while buyers arrive, and fails the run when one of them
	// grew without bound (gameday/soak.go).
	SoakEvery time.Duration
}

// TimelineSource records what a sale looked like while the game day ran, e.g. the war room.
type TimelineSource interface {
	Start(ctx context.Context, t0 time.Time, servers []string) error
	Stop() ([]Event, error)
}

// run is the state of one game day while it runs.
type run struct {
	cfg   Config
	rep   *Report
	env   *Env
	t0    time.Time
	mu    sync.Mutex
	out   io.Writer
	steps *steps.Runner
	up    []string // services this run started
	stack stack.Config

	db          *orders.Store
	st          *stock.Store
	sale        sale.Sale
	pipe        *pipeline.Run
	records     []loadgen.Record
	followUps   []loadgen.FollowUp
	closeStores func()
	// holds serializes the faults on one service (see holder).
	holds       map[string]*sync.Mutex
	stopPayment func()
	timelineOn  bool
	soak        *soakSampler
	teardownErr error
}

// Run plays the scenario. The returned report is filled as far as the run got, also on error;
// Passed says whether every phase, step and invariant held. The stack and every process the run
// started are stopped before Run returns, also when ctx is cancelled (Ctrl-C).
func Run(ctx context.Context, cfg Config) (rep *Report, err error) {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Out == nil {
		cfg.Out = io.Discard
	}
	if cfg.Teardown == "" {
		cfg.Teardown = TeardownAuto
	}
	if len(cfg.JWTSecret) == 0 {
		cfg.JWTSecret = []byte("fsctl-gameday-secret-not-for-production")
	}
	if cfg.Fsctl == "" {
		if cfg.Fsctl, err = os.Executable(); err != nil {
			return nil, err
		}
	}
	if cfg.WorkDir == "" {
		if cfg.WorkDir, err = os.MkdirTemp("", "fsctl-gameday-"); err != nil {
			return nil, err
		}
	} else if err := os.MkdirAll(cfg.WorkDir, 0o755); err != nil {
		return nil, err
	}
	sc := cfg.Scenario
	r := &run{cfg: cfg, out: cfg.Out, t0: cfg.Now(), stack: withClusterPorts(cfg.Stack)}
	r.steps = &steps.Runner{Now: cfg.Now, Print: func(line string) { r.printf("%s", line) }}
	r.stack.Log = io.Discard
	r.rep = &Report{Kind: "game day", Scenario: sc.Name, Seed: sc.Seed, Summary: sc.String(), Started: r.t0.UTC(), Machine: Machine(),
		Units: sc.Units(), WorkDir: cfg.WorkDir}
	if sc.Chaos != nil {
		r.rep.Replay = sc.Chaos.Command()
	}
	if cfg.Replay != "" {
		r.rep.Replay = cfg.Replay
	}
	r.env = &Env{Stack: r.stack, Endpoints: Endpoints(r.stack), SaleID: sc.Sale.ID, Rand: newSeeded(sc.Seed), Note: r.note}
	if cfg.Target != nil {
		r.rep.Kind = "drill"
		r.rep.Summary = fmt.Sprintf("drill %s: %d buyers at %g/s against %s, %d step(s), seed %d", sc.Name, sc.Buyers, sc.Rate, cfg.Target.URL, len(sc.Steps), sc.Seed)
	} else if err := loginEnv(r.env.Endpoints.Credentials); err != nil {
		return nil, err
	}
	if len(sc.Sale.Items) > 0 {
		r.env.FirstItem, r.env.FirstItemShards = sc.Sale.Items[0].ID, max(sc.Sale.Items[0].Shards, 1)
	}
	r.env.Rebuild = func(ctx context.Context) (string, error) { return r.rebuild(ctx, false) }
	r.env.RebuildLost = r.rebuildLost
	if cfg.Target != nil {
		fmt.Fprintf(r.out, "%s\n", r.rep.Summary)
	} else {
		fmt.Fprintf(r.out, "game day %s\n", sc)
	}
	defer func() {
		r.teardown()
		r.rep.Took = r.cfg.Now().Sub(r.t0)
		if err := errors.Join(err, r.teardownErr); err != nil {
			r.rep.Error = err.Error()
		}
		r.rep.Passed = err == nil && r.rep.allOK()
		r.printf("%s %s: %s in %s", r.rep.Kind, sc.Name, passWord(r.rep.Passed), r.rep.Took.Round(100*time.Millisecond))
	}()
	phases := []phaseFunc{
		{"stack", r.stackUp},
		{"sale", r.createSale},
		{"servers", r.startServers},
		{"preflight", r.preflight},
		{"blast", r.blast},
		{"settle", r.settle},
		{"reconcile", r.reconcile},
		{"invariants", r.invariants},
	}
	if cfg.Target != nil {
		phases = r.targetPhases()
	}
	var firstErr error
	for _, ph := range phases {
		// Once buyers were answered, settle, reconcile and the invariants run even after a failure
		// (a step that could not apply, a sale that did not settle): the report must say what state
		// the sale was left in.
		if firstErr != nil && (r.records == nil || ctx.Err() != nil) {
			break
		}
		if err := r.phase(ctx, ph.name, ph.fn); err != nil && firstErr == nil {
			firstErr = err
		}
	}
	return r.rep, firstErr
}

// phaseFunc is one phase of a run: its name and what it does.
type phaseFunc struct {
	name string
	fn   func(context.Context) (string, error)
}

// phase runs one phase as a step: an error is the phase failing. The report's phases are the
// steps so far.
func (r *run) phase(ctx context.Context, name string, fn func(context.Context) (string, error)) error {
	err := r.steps.Run(ctx, name, func(ctx context.Context) (string, bool, error) {
		note, err := fn(ctx)
		return note, err == nil, err
	})
	r.mu.Lock()
	r.rep.Phases = r.steps.Steps()
	r.mu.Unlock()
	return err
}

// note adds an event to the timeline and prints it.
func (r *run) note(format string, args ...any) {
	at := r.cfg.Now().Sub(r.t0)
	msg := fmt.Sprintf(format, args...)
	r.mu.Lock()
	r.rep.Timeline = append(r.rep.Timeline, Event{At: at, Source: "gameday", What: msg})
	r.mu.Unlock()
	r.printf("  %s", msg)
}

func (r *run) printf(format string, args ...any) {
	at := r.cfg.Now().Sub(r.t0)
	r.mu.Lock()
	defer r.mu.Unlock()
	fmt.Fprintf(r.out, "[%6.1fs] %s\n", at.Seconds(), fmt.Sprintf(format, args...))
}

func (r *run) stackUp(ctx context.Context) (string, error) {
	down, err := r.stackDown(ctx)
	if err != nil {
		return "", err
	}
	r.up = down
	if err := stack.Up(ctx, r.stack); err != nil {
		return "", err
	}
	if len(r.up) == 0 {
		return "already running (" + r.stack.Dir + ")" + on(r.stack), nil
	}
	return fmt.Sprintf("started %s in %s%s", strings.Join(r.up, ", "), r.stack.Dir, on(r.stack)), nil
}

// stackDown names the stack's services that are not running.
func (r *run) stackDown(ctx context.Context) ([]string, error) { return servicesDown(ctx, r.stack) }

// servicesDown names the services of the stack c that are not running.
func servicesDown(ctx context.Context, c stack.Config) ([]string, error) {
	statuses, err := stack.Status(ctx, c)
	if err != nil {
		return nil, err
	}
	var down []string
	for _, s := range statuses {
		if !s.Running {
			down = append(down, s.Name)
		}
	}
	return down, nil
}

// Endpoints are what a game day's sale runs on: the stack's single nodes, or its Redis Cluster and
// its replicated Kafka when the run asks for them (their ports defaulted).
func Endpoints(c stack.Config) stack.Endpoints {
	c = withClusterPorts(c)
	e := c.Endpoints()
	if c.RedisCluster.Masters > 0 {
		e.RedisURL = e.RedisClusterURL
	}
	if c.KafkaCluster.Brokers > 0 {
		e.KafkaBrokers = e.KafkaClusterBrokers
	}
	return e
}

// withClusterPorts fills the clusters' first ports the way the stack does.
func withClusterPorts(c stack.Config) stack.Config {
	if c.RedisCluster.Masters > 0 && c.RedisCluster.Port == 0 {
		c.RedisCluster.Port = stack.DefaultRedisClusterPort
	}
	if c.KafkaCluster.Brokers > 0 && c.KafkaCluster.Port == 0 {
		c.KafkaCluster.Port = stack.DefaultKafkaClusterPort
	}
	return c
}

// on says what the sale runs on, for the stack phase's note.
func on(c stack.Config) string {
	var parts []string
	if l := c.RedisCluster; l.Masters > 0 {
		parts = append(parts, fmt.Sprintf("a Redis Cluster of %d masters (%d replica(s) each)", l.Masters, l.Replicas))
	}
	if l := c.KafkaCluster; l.Brokers > 0 {
		parts = append(parts, fmt.Sprintf("a replicated Kafka of %d brokers", l.Brokers))
	}
	if len(parts) == 0 {
		return ""
	}
	return "; the sale runs on " + strings.Join(parts, " and ")
}

// teardown stops what the run started; it must run whatever happened, so it ignores ctx.
func (r *run) teardown() {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if r.cfg.Timeline != nil && r.timelineOn {
		r.stopTimeline()
	}
	r.stopSoak()
	if r.env.Fleet != nil {
		r.env.Fleet.Close(5 * time.Second)
		r.rep.Exits = r.env.Fleet.Exits()
	}
	if r.stopPayment != nil {
		r.stopPayment()
	}
	if r.env.Toxiproxy != nil {
		_ = r.env.Toxiproxy.Close() // the in-process server, and every proxy with it
	}
	if r.closeStores != nil {
		r.closeStores()
	}
	if r.cfg.Target != nil {
		r.printf("teardown: nothing of the target's is fsctl's to stop")
		return
	}
	if !r.cfg.Teardown.stops(len(r.up) > 0) {
		// A run cut short (Ctrl-C) may have left a service a fault had stopped; put it back.
		if err := stack.Up(ctx, r.stack); err != nil {
			r.printf("teardown: restore the stack: %v", err)
			r.teardownErr = err
		}
		r.printf("teardown: servers stopped; stack left running (%s)", r.cfg.Teardown)
		return
	}
	if err := stack.Down(ctx, r.stack); err != nil {
		r.printf("teardown: stack down: %v", err)
		r.teardownErr = err
		return
	}
	r.printf("teardown: servers and stack stopped")
}

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

// buyerConns is how many connections the game day's buyers share: enough for every buyer waiting
// at once to have one, as real buyers each have their own (the rate times the server's purchase
// deadline and a Retry-After's wait, 8 s), between 64 and 2048. With 64 (before), buyers arriving
// while purchases waited out a frozen store queued for a connection, and their client's 10 s ran
// out there: 358 TIMEOUTs in a run whose every purchase the servers answered within 6 s.
func buyerConns(rate float64) int {
	return int(min(max(rate*8, 64), 2048))
}

// localPlan is the buyers' plan against the game day's own fleet, released at at.
func (r *run) localPlan(at time.Time) loadgen.Plan {
	sc := r.cfg.Scenario
	var targets []loadgen.Target
	for _, it := range sc.Sale.Items {
		targets = append(targets, loadgen.Target{SaleID: sc.Sale.ID, ItemID: it.ID})
	}
	plan := loadgen.Plan{
		BaseURL: r.env.Fleet.URL(), Targets: targets, Buyers: sc.Buyers, Secret: r.cfg.JWTSecret,
		UserPrefix: fmt.Sprintf("gd-%d-", at.UnixMilli()), Clicks: 1, Retries: sc.Retries, RetryAfter: sc.RetryAfter, At: at, Conns: buyerConns(sc.Rate),
		Timeout:  10 * time.Second,
		Schedule: &loadgen.Schedule{Rate: sc.Rate, Ramp: sc.Ramp, Offsets: sc.Arrivals}, Replays: sc.Replays,
		After: &loadgen.AfterPurchase{Pay: sc.Pay, Cancel: sc.Cancel, Seed: sc.Seed, PaymentToken: "tok_gameday"}, // not tok_ok, which the fake always accepts
		Now:   r.cfg.Now,
	}
	if sc.Sale.Room != nil {
		plan.Journey = &loadgen.Room{MaxPoll: 250 * time.Millisecond, Wait: 30 * time.Second}
	}
	return plan
}

// blast fires the buyers while the steps inject their faults at their moments.
func (r *run) blast(ctx context.Context) (string, error) {
	sc := r.cfg.Scenario
	var plan loadgen.Plan
	if r.cfg.Target != nil {
		plan = r.targetPlan(r.cfg.Now().Add(loadgen.ReleaseLead(r.cfg.Target.Profile, sc.Buyers)).Round(time.Millisecond))
	} else {
		plan = r.localPlan(r.cfg.Now().Add(loadgen.ReleaseLead(nil, sc.Buyers)).Round(time.Millisecond))
	}
	at := plan.At
	r.rep.ReleasedAt = at.Sub(r.t0)
	if err := plan.Validate(); err != nil {
		return "", err
	}
	buyersDone := make(chan struct{})
	r.env.BuyersDone = buyersDone
	stepCtx, cancelSteps := context.WithCancel(ctx)
	defer cancelSteps()
	results := make([]StepResult, len(sc.Steps))
	var wg sync.WaitGroup
	for i, st := range sc.Steps {
		when := at.Add(st.At + r.env.Rand.Dur(st.Jitter))
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i] = r.step(stepCtx, st, when)
		}()
	}
	if r.cfg.SoakEvery > 0 {
		// From the buyers' release on: the idle minutes of start-up and preflight would flatter the first third.
		var err error
		if r.soak, err = startSoak(ctx, r.cfg.SoakEvery, r.env.Fleet, r.env.Endpoints.RedisURL, r.t0, r.cfg.Now); err != nil {
			return "", fmt.Errorf("soak: %w", err)
		}
	}
	res, berr := loadgen.Run(ctx, plan)
	close(buyersDone)
	// The soak judges the sale while it sells: the quiet settle after it would flatter the last third.
	r.stopSoak()
	r.note("last buyer answered; waiting for %d step(s) to finish", len(sc.Steps))
	wg.Wait()
	r.rep.Steps = results
	if berr != nil {
		return "", berr
	}
	r.records, r.rep.records = res.Records, res.Records
	r.rep.Availability = measureAvailability(res.Records, at)
	r.followUps = res.FollowUps
	r.rep.Blast = r.pipe.Answered(res, r.cfg.Target != nil) // a drill holds the answers to the target's stock and limits
	r.rep.FollowUps = blast.TallyFollowUps(res.FollowUps)
	var failed []string
	for _, s := range results {
		if s.Error != "" {
			failed = append(failed, fmt.Sprintf("line %d %s", s.Line, s.Fault))
		}
	}
	reserved := len(r.reservedOrders())
	note := fmt.Sprintf("%d buyers, %d requests, %d reservations, %.0f req/s", r.rep.Blast.Buyers, r.rep.Blast.Requests, reserved, r.rep.Blast.Throughput)
	if len(failed) > 0 {
		return note, fmt.Errorf("step(s) failed: %s", strings.Join(failed, ", "))
	}
	return note, nil
}

// step waits for its moment, applies the fault and records what happened.
func (r *run) step(ctx context.Context, st Step, when time.Time) StepResult {
	res := StepResult{Line: st.Line, Fault: st.Fault.Name(), Kind: cmp.Or(st.Kind, st.Fault.Name()), Describe: st.Fault.Describe(), Planned: st.At}
	if err := sleep(ctx, when.Sub(r.cfg.Now())); err != nil {
		res.Error = "not applied: " + err.Error()
		return res
	}
	if h, ok := st.Fault.(holder); ok {
		// Another fault on the same service goes first: a Redis that is being restarted cannot
		// also be frozen. Faults on different services overlap.
		mu := r.hold(h.Holds())
		waitFrom := r.cfg.Now()
		mu.Lock()
		defer mu.Unlock()
		if waited := r.cfg.Now().Sub(waitFrom); waited > 100*time.Millisecond {
			res.Note = fmt.Sprintf("waited %s for the fault before it on %s; ", waited.Round(100*time.Millisecond), h.Holds())
		}
	}
	begin := r.cfg.Now()
	res.Started = begin.Sub(r.t0)
	r.note("step (line %d) %s: %s", st.Line, res.Fault, res.Describe)
	// A fault that cannot finish (a process that never comes back) must not hold the run forever.
	sctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	note, err := st.Fault.Apply(sctx, r.env)
	res.Took, res.Note = r.cfg.Now().Sub(begin), res.Note+note
	switch {
	case err != nil && errors.Is(err, errNotTriggered) && r.cfg.Scenario.Chaos != nil:
		// Drawn, not scripted: the moment the nemesis chose had no buyer left for it.
		res.Note += "not triggered: " + err.Error()
		r.note("step (line %d) %s not triggered", st.Line, res.Fault)
	case err != nil && ctx.Err() != nil:
		res.Error = "interrupted: " + err.Error()
		r.note("step (line %d) %s interrupted", st.Line, res.Fault)
	case err != nil:
		res.Error = err.Error()
		r.note("step (line %d) %s FAILED: %v", st.Line, res.Fault, err)
	}
	return res
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

// hold is the lock of the faults on one service.
func (r *run) hold(service string) *sync.Mutex {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.holds == nil {
		r.holds = map[string]*sync.Mutex{}
	}
	if r.holds[service] == nil {
		r.holds[service] = &sync.Mutex{}
	}
	return r.holds[service]
}

// Machine describes the computer the game day ran on.
func Machine() string {
	host, _ := os.Hostname()
	model := "unknown CPU"
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				model = strings.TrimSpace(v)
				break
			}
		}
	}
	mem := ""
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		var kb int64
		if _, err := fmt.Sscanf(string(b), "MemTotal: %d kB", &kb); err == nil {
			mem = fmt.Sprintf(", %.0f GiB RAM", float64(kb)/(1<<20))
		}
	}
	return fmt.Sprintf("%s: %d CPU cores (%s)%s, %s/%s, %s", host, runtime.NumCPU(), model, mem, runtime.GOOS, runtime.GOARCH, runtime.Version())
}

func passWord(ok bool) string {
	if ok {
		return "PASS"
	}
	return "FAIL"
}

// workFile is a path in the run's work folder.
func (r *run) workFile(name string) string { return filepath.Join(r.cfg.WorkDir, name) }

// stopTimeline stops the timeline source and merges its events into the report's timeline.
func (r *run) stopTimeline() {
	r.timelineOn = false
	events, err := r.cfg.Timeline.Stop()
	if err != nil {
		r.note("timeline source: %v", err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.rep.Timeline = append(r.rep.Timeline, events...)
	slices.SortStableFunc(r.rep.Timeline, func(a, b Event) int { return cmp.Compare(a.At, b.At) })
}

// stopSoak ends the soak's sampling, if one runs, and puts its judged samples in the report.
func (r *run) stopSoak() {
	if r.soak == nil {
		return
	}
	soak := r.soak.Stop()
	r.soak = nil
	r.mu.Lock()
	r.rep.Soak = soak
	r.mu.Unlock()
	r.note("soak: %d samples; %s", len(soak.Samples), passWord(soak.OK()))
}

// loginEnv makes this process, and every instance and tool the game day starts, log in to a
// secure stack: its CA, users and passwords as FSCTL_* variables (the passwords read from their
// files, never put on a command line). A plain stack needs none.
func loginEnv(c *stack.Credentials) error {
	if c == nil {
		return nil
	}
	vars, err := c.Variables(stack.ReadPassword)
	if err != nil {
		return err
	}
	for _, kv := range vars {
		if err := os.Setenv(kv[0], kv[1]); err != nil {
			return err
		}
	}
	return nil
}
