package main

import (
	"time"

	"github.com/spf13/pflag"

	"github.com/fsctl/fsctl/blast"
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

// reads are the flags as the blast package takes them.
func (r readFlags) reads() blast.Reads {
	return blast.Reads{Before: r.before, After: r.after, Window: r.window, Share: r.share, Conns: r.conns, Poll: r.poll,
		PollInterval: r.pollInterval, PollWait: r.pollWait, InGiven: r.inGiven}
}
