package gameday

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/fsctl/fsctl/internal/checkout/orders"
	"github.com/fsctl/fsctl/internal/checkout/stock"
	"github.com/fsctl/fsctl/internal/contract/sale"
	"github.com/fsctl/fsctl/internal/harness/stack"
	"github.com/fsctl/fsctl/loadgen"
	"github.com/fsctl/fsctl/pipeline"
	"github.com/fsctl/fsctl/pipeline/steps"
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
	if cfg, err = cfg.withDefaults(); err != nil {
		return nil, err
	}
	sc := cfg.Scenario
	r, err := newRun(cfg)
	if err != nil {
		return nil, err
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

// withDefaults fills what cfg left out: the clock, the output, the teardown, the JWT secret, the
// fsctl binary (this one) and the work directory (a new temporary one), which it makes.
func (cfg Config) withDefaults() (Config, error) {
	var err error
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
			return cfg, err
		}
	}
	if cfg.WorkDir == "" {
		if cfg.WorkDir, err = os.MkdirTemp("", "fsctl-gameday-"); err != nil {
			return cfg, err
		}
	} else if err := os.MkdirAll(cfg.WorkDir, 0o755); err != nil {
		return cfg, err
	}
	return cfg, nil
}

// newRun sets up the run of cfg's scenario: its report, the faults' environment (logged in, on the
// game day's own stack) and the line that says what it plays.
func newRun(cfg Config) (*run, error) {
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
	return r, nil
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
