package main

import (
	"fmt"
	"time"

	"github.com/spf13/pflag"

	"github.com/fsctl/fsctl/loadgen"
)

// readFlags are blast's flags for the rest of a buyer's journey: the page refreshes around the
// release and the order polling after a 202.
type readFlags struct {
	before, after int
	window        time.Duration
	share         float64
	conns         int
	poll          bool
	pollInterval  time.Duration
	pollWait      time.Duration
	// inGiven says --in was on the command line; without it a burst with refreshes is released
	// once the whole window fits before it.
	inGiven bool
}

// defaultRefreshWindow is how long before the release the page refreshes are spread over.
const defaultRefreshWindow = 10 * time.Second

func (r *readFlags) bind(f *pflag.FlagSet) {
	f.IntVar(&r.before, "refreshes", 0, "page refreshes per buyer before the release: each buyer loads the sale page (GET /api/v1/sales/SALE, "+
		"or the profile's http.salePage) this many times, evenly over the --refresh-window that ends at the release; the reads get their own "+
		"table and latency, apart from the purchases (e.g. 10; 0 = none)")
	f.IntVar(&r.after, "refreshes-after", 0, "page refreshes per buyer after the release, over a --refresh-window that starts at it (waiting for the answer)")
	f.DurationVar(&r.window, "refresh-window", defaultRefreshWindow, "how long before (and after) the release the refreshes are spread over; "+
		"without --in or --at the release waits until the whole window fits (window + 2s)")
	f.Float64Var(&r.share, "refreshers", 1, "share of the buyers who refresh, 0 to 1 (the same buyers for the same --seed)")
	f.IntVar(&r.conns, "read-conns", loadgen.DefaultReadConns, "connections of the pool the page reads and order polls share, apart from the purchases' --conns")
	f.BoolVar(&r.poll, "poll-order", false, "after a RESERVED answer, poll GET /api/v1/orders/ID until it says persisted (written to PostgreSQL): "+
		"the report gives the time from the 202 to persisted and the orders never persisted within --poll-wait (needs --engine http; auto picks it)")
	f.DurationVar(&r.pollInterval, "poll-interval", 100*time.Millisecond, "with --poll-order, the pause between polls of one order")
	f.DurationVar(&r.pollWait, "poll-wait", 30*time.Second, "with --poll-order, give up on an order not persisted this long after its 202")
}

// apply puts the refreshes and the polling into the plan; now is when the flags were read. An
// explicit release that leaves the window no room before it is a usage error naming the flags.
func (r readFlags) apply(p *loadgen.Plan, at string, now time.Time, seed uint64) error {
	// Negative counts and shares are refused always; a window, a pool or a poll setting only
	// when it is used (the flags' defaults are always good).
	reads := r.before != 0 || r.after != 0 || r.poll
	switch {
	case r.before < 0:
		return fmt.Errorf("--refreshes %d: cannot be negative", r.before)
	case r.after < 0:
		return fmt.Errorf("--refreshes-after %d: cannot be negative", r.after)
	case r.share < 0 || r.share > 1:
		return fmt.Errorf("--refreshers %v: want a share of the buyers from 0 to 1", r.share)
	case (r.before > 0 || r.after > 0) && r.window <= 0:
		return fmt.Errorf("--refresh-window %s: must be positive", r.window)
	case reads && r.conns < 1:
		return fmt.Errorf("--read-conns %d: need at least one connection", r.conns)
	case r.poll && r.pollInterval <= 0:
		return fmt.Errorf("--poll-interval %s: must be positive", r.pollInterval)
	case r.poll && r.pollWait <= 0:
		return fmt.Errorf("--poll-wait %s: must be positive", r.pollWait)
	}
	p.ReadConns = r.conns
	if r.poll {
		p.Poll = &loadgen.OrderPoll{Interval: r.pollInterval, Wait: r.pollWait}
	}
	if r.before == 0 && r.after == 0 {
		return nil
	}
	p.Refresh = &loadgen.Refresh{Before: r.before, After: r.after, Window: r.window, Share: r.share, Seed: seed}
	if r.before == 0 {
		return nil
	}
	if at == "" && !r.inGiven {
		p.At = now.Add(r.window + 2*time.Second)
		return nil
	}
	if start := p.At.Add(-r.window); start.Before(now) {
		flag := "--in"
		if at != "" {
			flag = "--at"
		}
		return fmt.Errorf("--refresh-window %s starts %s ago: the release is only %s away; give %s at least %s or a shorter --refresh-window",
			r.window, now.Sub(start).Round(time.Millisecond), p.At.Sub(now).Round(time.Millisecond), flag, (r.window + 2*time.Second))
	}
	return nil
}
