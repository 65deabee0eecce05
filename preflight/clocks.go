package preflight

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/fsctl/fsctl/blast"
)

// clockReading is how far this machine's clock is ahead of another one, give or take half the
// round trip of the reading.
type clockReading struct {
	name   string
	offset time.Duration
	rtt    time.Duration
	err    error
}

// checkClocks: the sale opens by the servers' clocks, holds expire by Redis's and PostgreSQL's,
// and blast releases by this machine's; they must agree within MaxSkew.
func checkClocks(ctx context.Context, e *env) []Result {
	var mu sync.Mutex
	var readings []clockReading
	add := func(c clockReading) {
		mu.Lock()
		defer mu.Unlock()
		readings = append(readings, c)
	}
	var wg sync.WaitGroup
	if e.rdb != nil {
		wg.Go(func() { add(e.redisClock(ctx)) })
	}
	if e.db != nil {
		wg.Go(func() { add(e.postgresClock(ctx)) })
	}
	for _, base := range e.cfg.Servers {
		if e.foreign() {
			if e.prof.HTTP.Health != "" {
				wg.Go(func() { add(e.healthClock(ctx, base)) })
			}
			continue
		}
		wg.Go(func() {
			add(best(func() clockReading {
				s, err := blast.MeasureSkew(ctx, e.cfg.HTTP, strings.TrimRight(base, "/"), e.cfg.SaleID, e.cfg.Now)
				return clockReading{name: "server " + base, offset: s.Offset, rtt: s.RTT, err: err}
			}))
		})
	}
	wg.Wait()
	if len(readings) == 0 {
		return needs("clocks", "Redis", "PostgreSQL", "a server")
	}
	out := make([]Result, 0, len(readings))
	for _, c := range readings {
		out = append(out, clockResult(c, e.cfg.MaxSkew))
	}
	return out
}

func clockResult(c clockReading, limit time.Duration) Result {
	r := Result{Group: "clocks", Check: "clock " + c.name}
	if c.err != nil {
		r.Status, r.Detail = Fail, c.err.Error()
		return r
	}
	dir := "ahead of"
	if c.offset < 0 {
		dir = "behind"
	}
	r.Detail = fmt.Sprintf("this machine is %s %s %s (±%s)", round(c.offset.Abs()), dir, c.name, round(c.rtt/2))
	if c.offset.Abs() > limit {
		r.Status = Fail
		r.Detail += fmt.Sprintf(", more than --max-skew %s", limit)
		r.Fix = "sync both clocks with NTP (chronyc tracking / timedatectl) before the opening"
		return r
	}
	r.Status = Pass
	return r
}

// clockReadings is how many times a clock is read; the reading with the shortest round trip is
// kept, as NTP does, since its midpoint is the tightest bound.
const clockReadings = 3

func (e *env) redisClock(ctx context.Context) clockReading {
	return best(func() clockReading {
		sent := e.cfg.Now()
		t, err := e.rdb.Time(ctx).Result()
		return reading("redis", sent, e.cfg.Now(), t, err)
	})
}

func (e *env) postgresClock(ctx context.Context) clockReading {
	return best(func() clockReading {
		sent := e.cfg.Now()
		var t time.Time
		err := e.db.Pool().QueryRow(ctx, "SELECT clock_timestamp()").Scan(&t)
		return reading("postgres", sent, e.cfg.Now(), t, err)
	})
}

func best(read func() clockReading) clockReading {
	var out clockReading
	for i := range clockReadings {
		c := read()
		if c.err != nil {
			return c
		}
		if i == 0 || c.rtt < out.rtt {
			out = c
		}
	}
	return out
}

func reading(name string, sent, got, remote time.Time, err error) clockReading {
	if err != nil {
		return clockReading{name: name, err: fmt.Errorf("read the %s clock: %w", name, err)}
	}
	rtt := got.Sub(sent)
	return clockReading{name: name, offset: sent.Add(rtt / 2).Sub(remote), rtt: rtt}
}
