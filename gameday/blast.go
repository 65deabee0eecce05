package gameday

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/fsctl/fsctl/blast"
	"github.com/fsctl/fsctl/loadgen"
)

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
