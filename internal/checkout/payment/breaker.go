package payment

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/sony/gobreaker/v2"
)

// Charger charges orders; HTTPClient is one.
type Charger interface {
	Charge(ctx context.Context, ch Charge) (Receipt, error)
}

// Settler looks up and voids charges; HTTPClient is one. Breaker passes these calls through when the
// Charger it wraps is also a Settler.
type Settler interface {
	Lookup(ctx context.Context, orderID uuid.UUID) (Receipt, bool, error)
	Void(ctx context.Context, orderID uuid.UUID) (Receipt, error)
}

// State is the breaker's position. Its integer value suits a gauge: 0 closed, 1 half-open, 2 open.
type State int

// The breaker's positions.
const (
	StateClosed   State = 0
	StateHalfOpen State = 1
	StateOpen     State = 2
)

// String names the state: "closed", "half-open" or "open".
func (s State) String() string {
	switch s {
	case StateClosed:
		return "closed"
	case StateHalfOpen:
		return "half-open"
	case StateOpen:
		return "open"
	}
	return fmt.Sprintf("State(%d)", int(s))
}

func fromGobreaker(s gobreaker.State) State {
	switch s {
	case gobreaker.StateHalfOpen:
		return StateHalfOpen
	case gobreaker.StateOpen:
		return StateOpen
	}
	return StateClosed
}

// BreakerConfig tunes a Breaker; zero fields take the defaults noted on each.
type BreakerConfig struct {
	// Name labels the breaker in state changes and errors ("payment" when empty).
	Name string
	// ConsecutiveFailures opens the breaker after this many failures in a row (5).
	ConsecutiveFailures uint32
	// OpenTimeout is how long the breaker stays open before letting probes through (5s).
	OpenTimeout time.Duration
	// HalfOpenRequests is how many probes pass while half-open; that many successes close it (1).
	HalfOpenRequests uint32
	// Interval is how often a closed breaker forgets its counts (10s).
	Interval time.Duration
}

func (c BreakerConfig) withDefaults() BreakerConfig {
	if c.Name == "" {
		c.Name = "payment"
	}
	if c.ConsecutiveFailures == 0 {
		c.ConsecutiveFailures = 5
	}
	if c.OpenTimeout <= 0 {
		c.OpenTimeout = 5 * time.Second
	}
	if c.HalfOpenRequests == 0 {
		c.HalfOpenRequests = 1
	}
	if c.Interval <= 0 {
		c.Interval = 10 * time.Second
	}
	return c
}

// Breaker guards a Charger with a circuit breaker: after ConsecutiveFailures charges in a row end in
// ErrUnavailable or ErrUnknownOutcome, it refuses charges with ErrBreakerOpen for OpenTimeout, then
// lets HalfOpenRequests probes through. Declines and refused requests count as successes (the provider
// is working); a charge abandoned because the caller's context was canceled counts as neither. A call
// that fails on the caller's own deadline does count: a provider slower than the caller's budget is
// failing for that caller. Safe for concurrent use.
type Breaker struct {
	c   Charger
	cb  *gobreaker.CircuitBreaker[Receipt]
	cfg BreakerConfig
}

// NewBreaker wraps c. onState, when not nil, is told of every state change; it runs while the breaker
// holds its lock, so it must be quick and must not call the breaker.
func NewBreaker(c Charger, cfg BreakerConfig, onState func(name string, from, to State)) *Breaker {
	cfg = cfg.withDefaults()
	st := gobreaker.Settings{
		Name:        cfg.Name,
		MaxRequests: cfg.HalfOpenRequests,
		Interval:    cfg.Interval,
		Timeout:     cfg.OpenTimeout,
		ReadyToTrip: func(n gobreaker.Counts) bool { return n.ConsecutiveFailures >= cfg.ConsecutiveFailures },
		IsSuccessful: func(err error) bool {
			return err == nil || !(errors.Is(err, ErrUnavailable) || errors.Is(err, ErrUnknownOutcome))
		},
		IsExcluded: func(err error) bool {
			var c callerCanceled
			return errors.As(err, &c)
		},
	}
	if onState != nil {
		st.OnStateChange = func(name string, from, to gobreaker.State) {
			onState(name, fromGobreaker(from), fromGobreaker(to))
		}
	}
	return &Breaker{c: c, cb: gobreaker.NewCircuitBreaker[Receipt](st), cfg: cfg}
}

// callerCanceled marks a failure caused by the caller walking away, so the breaker does not count it.
type callerCanceled struct{ err error }

func (c callerCanceled) Error() string { return c.err.Error() }
func (c callerCanceled) Unwrap() error { return c.err }

// Charge charges through the wrapped Charger unless the breaker is open, in which case it returns an
// error wrapping ErrBreakerOpen without contacting the provider.
func (b *Breaker) Charge(ctx context.Context, ch Charge) (Receipt, error) {
	r, err := b.cb.Execute(func() (Receipt, error) {
		r, err := b.c.Charge(ctx, ch)
		if err != nil && errors.Is(ctx.Err(), context.Canceled) {
			return r, callerCanceled{err}
		}
		return r, err
	})
	var cc callerCanceled
	switch {
	case errors.As(err, &cc):
		return r, cc.err
	case errors.Is(err, gobreaker.ErrOpenState), errors.Is(err, gobreaker.ErrTooManyRequests):
		return Receipt{}, fmt.Errorf("charge %s: breaker %s is %s: %w", ch.OrderID, b.cfg.Name, b.State(), ErrBreakerOpen)
	}
	return r, err
}

// State reports the breaker's position now.
func (b *Breaker) State() State { return fromGobreaker(b.cb.State()) }

// Lookup passes through to the wrapped Charger, unguarded: lookups and voids settle charges whose
// outcome is unknown, which is exactly what has to happen while the breaker is open. It fails with
// errors.ErrUnsupported when the wrapped Charger is not a Settler.
func (b *Breaker) Lookup(ctx context.Context, orderID uuid.UUID) (Receipt, bool, error) {
	s, ok := b.c.(Settler)
	if !ok {
		return Receipt{}, false, fmt.Errorf("look up charge %s: %T: %w", orderID, b.c, errors.ErrUnsupported)
	}
	return s.Lookup(ctx, orderID)
}

// Void passes through to the wrapped Charger, unguarded for the reason given on Lookup. It fails with
// errors.ErrUnsupported when the wrapped Charger is not a Settler.
func (b *Breaker) Void(ctx context.Context, orderID uuid.UUID) (Receipt, error) {
	s, ok := b.c.(Settler)
	if !ok {
		return Receipt{}, fmt.Errorf("void charge %s: %T: %w", orderID, b.c, errors.ErrUnsupported)
	}
	return s.Void(ctx, orderID)
}
