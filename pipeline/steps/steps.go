// Package steps runs an orchestration as named steps, each timed, recorded and printed the same
// way. The demo, the drill and the game day are sequences of steps (set up, burst, settle,
// verify, reconcile, ...), so their reports and progress lines read alike.
package steps

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/fsctl/fsctl/internal/platform/durations"
)

// Step is one step that ran.
type Step struct {
	Name string `json:"name"`
	// Took is how long it ran: tookMs in JSON, milliseconds. Deprecated in JSON: took, the same in
	// nanoseconds, is written one more release (MarshalJSON).
	Took time.Duration `json:"took"`
	// Detail says what it did or found.
	Detail string `json:"detail,omitempty"`
	// OK is false for a step that ran and found the run failing; Error says why a step could
	// not run at all (which ends the run).
	OK    bool   `json:"ok"`
	Error string `json:"error,omitempty"`
}

// MarshalJSON writes the step with tookMs (and the deprecated took, nanoseconds).
func (s Step) MarshalJSON() ([]byte, error) {
	type plain Step
	return durations.MarshalMs(plain(s), durations.Field("took", &s.Took))
}

// UnmarshalJSON reads a step written with tookMs, or before it, with took only.
func (s *Step) UnmarshalJSON(b []byte) error {
	type plain Step
	return durations.UnmarshalMs(b, (*plain)(s), durations.Field("took", &s.Took))
}

// Func is a step's body: what it found, whether that passes, or why it could not run.
type Func func(ctx context.Context) (detail string, ok bool, err error)

// Named is a step to run: its name and its body.
type Named struct {
	Name string
	Func Func
}

// Runner runs steps one after another (or from several goroutines) and keeps what they did.
type Runner struct {
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Print, when set, receives a line as each step starts and one as it ends.
	Print func(line string)

	mu    sync.Mutex
	steps []Step
}

// Run runs one step and records it. An error is returned, wrapped with the step's name, when the
// step could not run or the context ended (an interrupted step says so, not what the
// interruption broke); a step that ran and did not pass is recorded, not an error.
func (r *Runner) Run(ctx context.Context, name string, fn Func) error {
	now := r.Now
	if now == nil {
		now = time.Now
	}
	r.print("%s ...", name)
	begin := now()
	detail, ok, err := fn(ctx)
	if ctx.Err() != nil {
		err = fmt.Errorf("interrupted: %w", ctx.Err())
	}
	s := Step{Name: name, Took: now().Sub(begin), Detail: detail, OK: ok && err == nil}
	if err != nil {
		s.Error = err.Error()
	}
	r.mu.Lock()
	r.steps = append(r.steps, s)
	r.mu.Unlock()
	took := s.Took.Round(time.Millisecond)
	switch {
	case err != nil:
		r.print("%s ERROR after %s: %v", name, took, err)
		return fmt.Errorf("%s: %w", name, err)
	case ok:
		r.print("%s OK in %s: %s", name, took, detail)
	default:
		r.print("%s FAILED in %s: %s", name, took, detail)
	}
	return nil
}

// All runs the steps in order and stops at the first that could not run.
func (r *Runner) All(ctx context.Context, ss []Named) error {
	for _, s := range ss {
		if err := r.Run(ctx, s.Name, s.Func); err != nil {
			return err
		}
	}
	return nil
}

// Steps are the steps that ran, in the order they ended.
func (r *Runner) Steps() []Step {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Step(nil), r.steps...)
}

// OK reports whether every step ran and passed.
func OK(ss []Step) bool {
	for _, s := range ss {
		if !s.OK {
			return false
		}
	}
	return true
}

func (r *Runner) print(format string, a ...any) {
	if r.Print != nil {
		r.Print(fmt.Sprintf(format, a...))
	}
}

// Word is a step's result in one word: OK, FAILED or ERROR.
func (s Step) Word() string {
	switch {
	case s.Error != "":
		return "ERROR"
	case s.OK:
		return "OK"
	}
	return "FAILED"
}
