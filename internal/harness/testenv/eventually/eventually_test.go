package eventually_test

import (
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/fsctl/fsctl/internal/harness/testenv/eventually"
)

// fakeT records what a wait reports instead of failing the real test. Its Fatalf ends the
// goroutine as the real one does, so run calls the wait on a goroutine of its own.
type fakeT struct {
	testing.TB // nil: a wait that calls anything else panics
	fatal      string
}

func (f *fakeT) Helper() {}

func (f *fakeT) Fatalf(format string, args ...any) {
	f.fatal = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

// run calls wait with a fakeT and returns what it reported through Fatalf ("" when nothing)
// and whether wait returned on its own.
func run(wait func(t testing.TB)) (fatal string, returned bool) {
	f := &fakeT{}
	done := make(chan bool)
	go func() {
		ok := false
		defer func() { done <- ok }()
		wait(f)
		ok = true
	}()
	returned = <-done
	return f.fatal, returned
}

func TestOKReturnsOnceTryPasses(t *testing.T) {
	tries := 0
	fatal, returned := run(func(ft testing.TB) {
		eventually.OKEvery(ft, 10*time.Second, time.Millisecond, func() error {
			if tries++; tries < 3 {
				return errors.New("not yet")
			}
			return nil
		})
	})
	if !returned || fatal != "" || tries != 3 {
		t.Fatalf("returned %v after %d tries, Fatalf %q; want it to return after 3 tries without failing", returned, tries, fatal)
	}
}

func TestOKTriesAtOnce(t *testing.T) {
	start := time.Now()
	fatal, returned := run(func(ft testing.TB) {
		eventually.OK(ft, 10*time.Second, func() error { return nil })
	})
	if !returned || fatal != "" {
		t.Fatalf("returned %v, Fatalf %q; want a passing try to end the wait", returned, fatal)
	}
	if waited := time.Since(start); waited >= eventually.Interval {
		t.Fatalf("a try that passes at once waited %s", waited)
	}
}

func TestOKReportsTheLastErrorAndTheWait(t *testing.T) {
	tries := 0
	start := time.Now()
	fatal, returned := run(func(ft testing.TB) {
		eventually.OKEvery(ft, 100*time.Millisecond, 10*time.Millisecond, func() error {
			tries++
			return fmt.Errorf("try %d failed", tries)
		})
	})
	if returned {
		t.Fatal("the wait returned although try never passed")
	}
	if waited := time.Since(start); waited < 100*time.Millisecond {
		t.Fatalf("gave up after %s, before the 100ms it was given", waited)
	}
	want := fmt.Sprintf("still failing after 100ms (%d tries): try %d failed", tries, tries)
	if fatal != want {
		t.Fatalf("Fatalf %q, want %q", fatal, want)
	}
}

func TestTrueReportsItsMessage(t *testing.T) {
	fatal, returned := run(func(ft testing.TB) {
		eventually.True(ft, 20*time.Millisecond, func() bool { return false }, "view of %s not live", "orders")
	})
	if returned || !strings.HasPrefix(fatal, "still failing after 20ms (") || !strings.HasSuffix(fatal, "): view of orders not live") {
		t.Fatalf("returned %v, Fatalf %q; want a failure naming the wait and the message", returned, fatal)
	}
	calls := 0
	fatal, returned = run(func(ft testing.TB) {
		eventually.True(ft, 10*time.Second, func() bool { calls++; return calls == 2 }, "never")
	})
	if !returned || fatal != "" || calls != 2 {
		t.Fatalf("returned %v after %d calls, Fatalf %q; want it to return once cond holds", returned, calls, fatal)
	}
}
