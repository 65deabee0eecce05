package server

import (
	"context"
	"errors"
	"runtime"
	"testing"
	"time"
)

type clockKey struct{}

// TestCoarseClock: a clocked context keeps its parent's values, ends on its clock (never before
// d, at most a window after, with DeadlineExceeded, its cause too) and not when its parent does; the requests of
// one window share one context; a child context of it ends with it without a goroutine of its own.
func TestCoarseClock(t *testing.T) {
	const d = 200 * time.Millisecond
	c := newCoarseClock(d)
	parent, cancelParent := context.WithCancel(context.WithValue(context.Background(), clockKey{}, "buyer"))
	start := time.Now()
	ctx := c.on(parent)
	if got := ctx.Value(clockKey{}); got != "buyer" {
		t.Errorf("value %v, want the parent's", got)
	}
	dl, ok := ctx.Deadline()
	if !ok || dl.Before(start.Add(d)) || dl.After(time.Now().Add(d+clockWindow)) {
		t.Errorf("deadline %v after the start, want within [%s, %s]", dl.Sub(start), d, d+clockWindow)
	}
	if again := c.on(context.Background()); again.Done() != ctx.Done() && time.Since(start) < clockWindow/2 {
		t.Error("two contexts asked for within one window have clocks of their own")
	}

	before := runtime.NumGoroutine()
	children := make([]context.Context, 100)
	for i := range children {
		var cancel context.CancelFunc
		children[i], cancel = context.WithTimeout(ctx, time.Hour)
		defer cancel()
	}
	if n := runtime.NumGoroutine(); n > before+10 {
		t.Errorf("100 child contexts started %d goroutines: the context package does not see clocked's AfterFunc", n-before)
	}

	cancelParent()
	if err, cause := ctx.Err(), context.Cause(ctx); err != nil || cause != nil {
		t.Fatalf("ended with its parent: %v (cause %v)", err, cause)
	}
	<-ctx.Done()
	if cause := context.Cause(ctx); !errors.Is(cause, context.DeadlineExceeded) {
		t.Errorf("its cause is %v, want its own end, context.DeadlineExceeded", cause)
	}
	if took := time.Since(start); took < d {
		t.Errorf("ended %s after the start, before its %s", took, d)
	}
	if err := ctx.Err(); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("ended with %v, want context.DeadlineExceeded", err)
	}
	for i, child := range children {
		select {
		case <-child.Done():
		case <-time.After(5 * time.Second):
			t.Fatalf("child %d did not end with its parent", i)
		}
		if !errors.Is(child.Err(), context.DeadlineExceeded) {
			t.Fatalf("child %d ended with %v, want its parent's context.DeadlineExceeded", i, child.Err())
		}
	}
	if late := c.on(context.Background()); late.Err() != nil || late.Done() == ctx.Done() {
		t.Error("a context asked for after the window is the old window's")
	}
}
