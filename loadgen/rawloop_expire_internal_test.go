//go:build linux

package loadgen

import (
	"testing"
	"time"
)

// TestExpireSaysWhenToLookAgain: a sweep that times nothing out answers the earliest time a
// waiting click could: the earliest start of a connection's first unanswered click plus the
// timeout (its write's end may come later, never its start), or now plus the timeout when no
// click waits. A later answer would let a click outlive its timeout unseen; the loop only sweeps
// again at that time.
func TestExpireSaysWhenToLookAgain(t *testing.T) {
	t0 := time.Date(2026, 12, 5, 20, 0, 0, 0, time.UTC)
	const timeout = 50 * time.Millisecond
	recs := make([]Record, 6)
	recs[0].Started, recs[0].Written = t0.Add(4*time.Millisecond), t0.Add(5*time.Millisecond) // conn a's first
	recs[1].Started = t0.Add(6 * time.Millisecond)                                            // behind it on a
	recs[2].Started, recs[2].Written = t0.Add(2*time.Millisecond), t0.Add(9*time.Millisecond) // conn b's first: the earliest start
	recs[3].Started = t0.Add(1 * time.Millisecond)                                            // conn c's, already answered
	recs[4].Started = t0                                                                      // conn d's first: not stamped yet
	conn := func(idx []int, head, stamped int) *loopConn {
		return &loopConn{lane: &lane{idx: idx}, fd: 3, head: head, next: stamped, stamped: stamped}
	}
	p := &Plan{Timeout: timeout}
	lp := &eventLoop{p: p, recs: recs, conns: []*loopConn{
		conn([]int{0, 1}, 0, 2), conn([]int{2}, 0, 1), conn([]int{3}, 1, 1), conn([]int{4}, 0, 0),
	}}
	now := t0.Add(20 * time.Millisecond)
	if got, want := lp.expire(now), t0.Add(2*time.Millisecond+timeout); !got.Equal(want) {
		t.Fatalf("next sweep at +%v, want +%v (conn b's first click's start plus the timeout)", got.Sub(t0), want.Sub(t0))
	}
	for i, r := range recs {
		if !r.Done.IsZero() || r.Outcome != "" {
			t.Fatalf("click %d settled (%s) before its timeout", i, r.Outcome)
		}
	}
	lp.conns = lp.conns[2:] // nothing waits: the longest a click stamped from now on can wait
	if got, want := lp.expire(now), now.Add(timeout); !got.Equal(want) {
		t.Fatalf("with no click waiting: next sweep at +%v, want +%v", got.Sub(t0), want.Sub(t0))
	}
}
