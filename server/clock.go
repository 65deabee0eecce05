package server

import (
	"context"
	"sync/atomic"
	"time"
)

// clockWindow is how long a coarseClock hands out one context: how late, at most, one of its
// contexts ends.
const clockWindow = 10 * time.Millisecond

// coarseClock hands out contexts that end a set time after they are asked for, give or take a
// window: every request that asks within one window gets the same context, with the one timer of
// it, which ends d after the window's end, so never early and at most clockWindow late. A purchase's
// steps before the reserve, and its reserve call, run on such contexts instead of timers of their
// own: a purchase built three contexts with a timer each (its deadline, the late answer's timer, the
// reserve's own clock), about a microsecond of CPU, a twentieth of the sold-out path's
// (docs/benchmarks.md).
type coarseClock struct {
	d   time.Duration
	cur atomic.Pointer[clockTick]
}

type clockTick struct {
	ctx    context.Context
	cancel context.CancelFunc // never called: the context ends at its deadline, and its timer with it
	until  int64              // Unix ns: handed out to whoever asks before this
}

func newCoarseClock(d time.Duration) *coarseClock { return &coarseClock{d: d} }

// ending returns a context that ends between d and d+clockWindow after now.
func (c *coarseClock) ending(now time.Time) context.Context {
	n := now.UnixNano()
	for {
		t := c.cur.Load()
		if t != nil && n < t.until {
			return t.ctx
		}
		ctx, cancel := context.WithDeadline(context.Background(), now.Add(clockWindow+c.d))
		if c.cur.CompareAndSwap(t, &clockTick{ctx: ctx, cancel: cancel, until: n + int64(clockWindow)}) {
			return ctx
		}
		cancel() // another request opened a window first: look at it
	}
}

// on returns parent's values on c's clock: the context ends d (give or take the window) from now,
// whether or not parent ends first, as context.WithoutCancel and a timeout would make it.
func (c *coarseClock) on(parent context.Context) context.Context {
	return &clocked{Context: context.WithoutCancel(parent), clock: c.ending(time.Now())}
}

// clocked is a context with the values of its parent and the end of its clock. Its parent is
// seen through context.WithoutCancel, which hides the parent's cancellation from the context
// package too: context.Cause of a clocked context is its own end, not its parent's.
type clocked struct {
	context.Context // the values
	clock           context.Context
}

func (c *clocked) Deadline() (time.Time, bool) { return c.clock.Deadline() }
func (c *clocked) Done() <-chan struct{}       { return c.clock.Done() }
func (c *clocked) Err() error                  { return c.clock.Err() }

// AfterFunc is how the context package ties a child's end to a parent that is not one of its own
// types, instead of a goroutine that waits for it (context.WithTimeout of a clocked context).
func (c *clocked) AfterFunc(f func()) func() bool { return context.AfterFunc(c.clock, f) }
