package preflight

import (
	"cmp"
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/fsctl/fsctl/internal/contract/finding"
	"github.com/fsctl/fsctl/internal/platform/skew"
)

// clockReading is how far this machine's clock is from another one.
type clockReading struct {
	name string
	skew.Skew
	err error
}

// clockReadings is how many times a clock is read; the reading with the shortest round trip is
// kept (skew.Best).
const clockReadings = 3

// checkClocks: the sale opens by the servers' clocks, holds expire by Redis's and PostgreSQL's,
// and blast releases by this machine's; they must agree within MaxSkew.
func checkClocks(ctx context.Context, e *env) []finding.Finding {
	var mu sync.Mutex
	var readings []clockReading
	read := func(name string, r func() (skew.Skew, error)) {
		s, err := skew.Best(clockReadings, r)
		mu.Lock()
		defer mu.Unlock()
		readings = append(readings, clockReading{name: name, Skew: s, err: err})
	}
	var wg sync.WaitGroup
	if e.rdb != nil {
		wg.Go(func() {
			read("redis", func() (skew.Skew, error) {
				sent := e.cfg.Now()
				t, err := e.rdb.Time(ctx).Result()
				return remoteClock("redis", sent, e.cfg.Now(), t, err)
			})
		})
	}
	if e.db != nil {
		wg.Go(func() {
			read("postgres", func() (skew.Skew, error) {
				sent := e.cfg.Now()
				var t time.Time
				err := e.db.Pool().QueryRow(ctx, "SELECT clock_timestamp()").Scan(&t)
				return remoteClock("postgres", sent, e.cfg.Now(), t, err)
			})
		})
	}
	for _, base := range e.cfg.Servers {
		if url := e.clockURL(base); url != "" {
			wg.Go(func() {
				read("server "+base, func() (skew.Skew, error) { return skew.Measure(ctx, e.cfg.HTTP, url, e.cfg.Now) })
			})
		}
	}
	wg.Wait()
	if len(readings) == 0 {
		return needs("clocks", "Redis", "PostgreSQL", "a server")
	}
	out := make([]finding.Finding, 0, len(readings))
	for _, c := range readings {
		out = append(out, clockResult(c, e.cfg.MaxSkew))
	}
	return out
}

// clockURL is where a server's time is read: the sale page when the profile declares one (its
// serverTime), else the health endpoint (its Date header); "" when it declares neither.
func (e *env) clockURL(base string) string {
	return cmp.Or(e.prof.Endpoint(base, e.prof.HTTP.SalePage, e.cfg.SaleID), e.prof.Endpoint(base, e.prof.HTTP.Health, e.cfg.SaleID))
}

func remoteClock(name string, sent, got, remote time.Time, err error) (skew.Skew, error) {
	if err != nil {
		return skew.Skew{}, fmt.Errorf("read the %s clock: %w", name, err)
	}
	return skew.Between(sent, got, remote), nil
}

// clockResult judges a reading by the least offset it allows, so a clock read to the second is
// not failed for the second it cannot see.
func clockResult(c clockReading, limit time.Duration) finding.Finding {
	r := finding.Finding{Group: "clocks", Check: "clock " + c.name}
	if c.err != nil {
		r.Status, r.Detail = finding.Fail, c.err.Error()
		return r
	}
	offset := c.Least()
	dir := "ahead of"
	if offset < 0 {
		dir = "behind"
	}
	r.Detail = fmt.Sprintf("this machine is %s %s %s (±%s)", round(offset.Abs()), dir, c.name, round(c.Bound()))
	if c.Resolution > 0 {
		r.Detail += fmt.Sprintf(", from its %s", c.Source)
	}
	if offset.Abs() > limit {
		r.Status = finding.Fail
		r.Detail += fmt.Sprintf(", more than --max-skew %s", limit)
		r.Fix = "sync both clocks with NTP (chronyc tracking / timedatectl) before the opening"
		return r
	}
	r.Status = finding.Pass
	return r
}
