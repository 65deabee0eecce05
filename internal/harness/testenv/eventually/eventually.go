// Package eventually waits, in tests, for something that comes true in its own time: a consumer
// that catches up, a server that starts answering, a switch that reaches every instance. It is
// the one poll-until-deadline loop the tests share, and imports only the standard library so
// that any package's tests can use it.
package eventually

import (
	"fmt"
	"testing"
	"time"
)

// Interval is the pause between tries: short next to the seconds a test is willing to wait, long
// enough not to keep a busy machine busier.
const Interval = 50 * time.Millisecond

// OK calls try at once and then every Interval until it returns nil. If try still fails after
// within, OK fails the test with try's last error and how long it waited.
//
// OK calls t.Fatalf, so it must run on the test's own goroutine, like t.Fatal itself; try runs on
// that goroutine too, so it may call t.Fatal for an error that no retry can mend.
func OK(t testing.TB, within time.Duration, try func() error) {
	t.Helper()
	OKEvery(t, within, Interval, try)
}

// OKEvery is OK with another pause between tries, for a wait that needs a tighter or a slower
// pace than Interval (an in-memory queue, a page that is cached for a second).
func OKEvery(t testing.TB, within, every time.Duration, try func() error) {
	t.Helper()
	deadline := time.Now().Add(within)
	for tries := 1; ; tries++ {
		err := try()
		if err == nil {
			return
		}
		// The deadline is checked after a try, so there is always one try after the last pause.
		if time.Now().After(deadline) {
			t.Fatalf("still failing after %s (%d tries): %v", within, tries, err)
			return // only reached with a fake t whose Fatalf returns
		}
		time.Sleep(every)
	}
}

// True calls cond at once and then every Interval until it returns true. If it is still false
// after within, True fails the test with the message of format and args. The args are evaluated
// when True is called, so a message that must show the last state belongs in an OK instead.
// Like OK, it must run on the test's own goroutine.
func True(t testing.TB, within time.Duration, cond func() bool, format string, args ...any) {
	t.Helper()
	OK(t, within, func() error {
		if cond() {
			return nil
		}
		return fmt.Errorf(format, args...)
	})
}
