package loadgen

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"sync"
	"time"

	"github.com/fsctl/fsctl/internal/target/profile"
)

// Refresh is the page traffic of a burst: the same prepared buyers reloading the sale page (the
// profile's http.salePage, fsctl serve's cached read model) while they wait for the opening, as
// real buyers do 10 to 50 times, and, with After, while they wait for their answer.
//
// The reads go over a pool of their own (Plan.ReadConns), on net/http whichever engine sends the
// purchases: the purchases' pool stays theirs alone, so the barrier still releases every purchase
// at one instant onto idle connections, and what the reads change is the load on the server, which
// is what a burst with reads is meant to show. No refresh is due in the quiet band (10 ms, or a
// tenth of a short window) on either side of the release, so none is being sent by the generator
// while the barrier spins and the purchases leave.
type Refresh struct {
	// Before is how many times each refreshing buyer loads the page in the Window that ends at the
	// release; After, in the Window that starts at it.
	Before, After int
	// Window is how long before (and after) the release the loads are spread over.
	Window time.Duration
	// Share is the fraction of the buyers who refresh, 0 to 1; which ones is decided by Seed and
	// the buyer's index alone, so every shard and every rerun picks the same buyers.
	Share float64
	Seed  uint64
}

// DefaultReadConns is the size of the reads' own pool when the plan gives none.
const DefaultReadConns = 64

// readQuiet is the band around the release in which no refresh is due.
const readQuiet = 10 * time.Millisecond

// Validate refuses negative counts, a window that is not positive and a share outside 0..1.
func (r Refresh) Validate() error {
	switch {
	case r.Before < 0 || r.After < 0:
		return fmt.Errorf("refreshes %d before and %d after the release: cannot be negative", r.Before, r.After)
	case r.Window <= 0:
		return fmt.Errorf("refresh window %s: must be positive", r.Window)
	case r.Share < 0 || r.Share > 1:
		return fmt.Errorf("refreshing share %v: want a fraction from 0 to 1", r.Share)
	}
	return nil
}

// Refreshes reports whether buyer k is one of those who refresh.
func (r Refresh) Refreshes(k int) bool {
	if r.Share >= 1 {
		return true
	}
	// Its own stream, so who refreshes is not who pays under the same seed.
	return rand.New(rand.NewPCG(r.Seed^0x5eed4ead, uint64(k))).Float64() < r.Share
}

// Slots are when the refreshing buyer of rank k among n refreshers is due to load the page: its
// Before loads evenly spaced in the window before at, then its After loads in the window after.
// Buyers are staggered by rank, so the burst's reads arrive at an even rate, n × (Before /
// Window), never in lockstep.
func (r Refresh) Slots(at time.Time, k, n int) []time.Time {
	quiet := min(readQuiet, r.Window/10)
	span := float64(r.Window - quiet)
	place := func(j, per int) time.Duration {
		return time.Duration(span * (float64(j*n+k) + 0.5) / float64(per*n))
	}
	out := make([]time.Time, 0, r.Before+r.After)
	for j := range r.Before {
		out = append(out, at.Add(-r.Window+place(j, r.Before)))
	}
	for j := range r.After {
		out = append(out, at.Add(quiet+place(j, r.After)))
	}
	return out
}

// pageReader is one refreshing buyer's prepared page loads: the request and a record per slot.
type pageReader struct {
	req  *http.Request
	recs []Record
}

// readSide is a burst's reads: the client of their own pool (the order polls use it too) and the
// page loads under way.
type readSide struct {
	client *http.Client
	cancel context.CancelFunc
	done   chan struct{}
	recs   []Record
}

// readConns is the size of the reads' pool.
func (p Plan) readConns() int {
	if p.ReadConns > 0 {
		return p.ReadConns
	}
	return DefaultReadConns
}

// reads reports whether the plan sends anything over the reads' pool.
func (p Plan) reads() bool { return p.Refresh != nil || p.Poll != nil }

// validateReads refuses page reads a target has no page for, and polls of orders its profile
// declares no address of.
func (p Plan) validateReads() error {
	if p.ReadConns < 0 {
		return fmt.Errorf("read conns %d: cannot be negative", p.ReadConns)
	}
	if p.Refresh != nil {
		if err := p.Refresh.Validate(); err != nil {
			return err
		}
		if prof := p.target(); prof.HTTP.SalePage == "" {
			return fmt.Errorf("page refreshes load the sale page the target's profile declares: profile %s has no http.salePage", prof.Name)
		}
	}
	if p.Poll != nil {
		if err := p.Poll.Validate(); err != nil {
			return err
		}
		if prof := p.target(); prof.HTTP.Order == "" {
			return missingEndpoint(prof, "order polling", "order", func(h profile.HTTP) string { return h.Order })
		}
	}
	return nil
}

// prepareReads builds every refreshing buyer's page request and the records of its slots.
func (p Plan) prepareReads() ([]pageReader, error) {
	var refreshers []Buyer
	for _, b := range p.Roster() {
		if p.Refresh.Refreshes(b.Index) {
			refreshers = append(refreshers, b)
		}
	}
	prof := p.target()
	out := make([]pageReader, len(refreshers))
	for k, b := range refreshers {
		req, err := http.NewRequest(http.MethodGet, prof.Endpoint(p.BaseURL, prof.HTTP.SalePage, b.Target.SaleID), nil)
		if err != nil {
			return nil, fmt.Errorf("buyer %d's page: %w", b.Index, err)
		}
		slots := p.Refresh.Slots(p.At, k, len(refreshers))
		recs := make([]Record, len(slots))
		for j, at := range slots {
			recs[j] = Record{Buyer: b.Index, User: b.User, Target: b.Target, Click: j + 1, Attempt: 1, Intended: at,
				Method: req.Method, URL: req.URL.String()}
		}
		out[k] = pageReader{req: req, recs: recs}
	}
	return out, nil
}

// startReads warms the reads' pool and starts the page loads, each refreshing buyer on its own
// goroutine; nil when the plan has no reads.
func (p Plan) startReads(ctx context.Context) (*readSide, error) {
	if !p.reads() {
		return nil, nil
	}
	var readers []pageReader
	if p.Refresh != nil {
		var err error
		if readers, err = p.prepareReads(); err != nil {
			return nil, err
		}
	}
	client := p.NewClient(p.readConns(), p.Timeout)
	if err := warm(ctx, client, p.BaseURL, p.healthPath(), p.readConns()); err != nil {
		client.CloseIdleConnections()
		return nil, fmt.Errorf("reads' pool: %w", err)
	}
	rctx, cancel := context.WithCancel(ctx)
	rs := &readSide{client: client, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(rs.done)
		var wg sync.WaitGroup
		for _, rd := range readers {
			wg.Go(func() { rd.load(rctx, client, p.now) })
		}
		wg.Wait()
		for _, rd := range readers {
			for _, r := range rd.recs {
				if !r.Started.IsZero() {
					rs.recs = append(rs.recs, r)
				}
			}
		}
	}()
	return rs, nil
}

// finish waits for the page loads (cutting them short when abort) and closes the pool; it
// returns every load sent.
func (rs *readSide) finish(abort bool) []Record {
	if rs == nil {
		return nil
	}
	if abort {
		rs.cancel()
	}
	<-rs.done
	rs.cancel()
	rs.client.CloseIdleConnections()
	return rs.recs
}

// load sends one buyer's page loads at their slots, one after the other as a person reloads: a
// load that is late because the previous answer was slow keeps its slot, so the wait shows in its
// latency. Like a browser, it revalidates with the last answer's ETag (a 304 when nothing changed).
func (rd pageReader) load(ctx context.Context, c *http.Client, now func() time.Time) {
	var etag string
	for i := range rd.recs {
		r := &rd.recs[i]
		if err := sleepUntil(ctx, r.Intended, now, 0); err != nil {
			return
		}
		req := rd.req.WithContext(ctx)
		if etag != "" {
			req = req.Clone(ctx)
			req.Header.Set("If-None-Match", etag)
		}
		if resp, _, ok := exchange(ctx, c, req, now, r); ok {
			if e := resp.Header.Get("ETag"); e != "" {
				etag = e
			}
		}
		if ctx.Err() != nil && errors.Is(ctx.Err(), context.Canceled) {
			return
		}
	}
}
