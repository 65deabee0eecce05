package payment_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/fsctl/fsctl/internal/checkout/payment"
	"github.com/fsctl/fsctl/internal/checkout/payment/fake"
	"github.com/fsctl/fsctl/internal/harness/testenv/eventually"
)

// transitions records the breaker's state changes.
type transitions struct {
	mu  sync.Mutex
	got []string
}

func (tr *transitions) record(name string, from, to payment.State) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	tr.got = append(tr.got, fmt.Sprintf("%s: %s->%s", name, from, to))
}

func (tr *transitions) list() []string {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return slices.Clone(tr.got)
}

// waitState polls until the breaker reports want; gobreaker reads the wall clock, so leaving the open
// state takes real time. The deadline only bounds a broken test, it is no timing assertion.
func waitState(t *testing.T, b *payment.Breaker, want payment.State) {
	t.Helper()
	eventually.OK(t, 10*time.Second, func() error {
		if got := b.State(); got != want {
			return fmt.Errorf("breaker stayed %s, want %s", got, want)
		}
		return nil
	})
}

func TestBreakerOpensAndRefusesWithoutCallingTheProvider(t *testing.T) {
	p, base := startFake(t, fake.Config{}, nil)
	var tr transitions
	b := payment.NewBreaker(payment.NewHTTPClient(base, 0),
		payment.BreakerConfig{Name: "psp", ConsecutiveFailures: 3, OpenTimeout: time.Hour}, tr.record)
	ctx := context.Background()
	for i := range 3 {
		if b.State() != payment.StateClosed {
			t.Fatalf("open after %d failures", i)
		}
		_, err := b.Charge(ctx, charge("tok_error"))
		checkErr(t, err, payment.ErrUnavailable)
	}
	if b.State() != payment.StateOpen || int(b.State()) != 2 {
		t.Fatalf("state %s (%d) after 3 failures, want open (2)", b.State(), int(b.State()))
	}
	for range 5 {
		_, err := b.Charge(ctx, charge("tok_ok"))
		checkErr(t, err, payment.ErrBreakerOpen)
	}
	if s := p.Stats(); s.Charges != 3 {
		t.Fatalf("provider saw %d charges, want 3: the open breaker let calls through", s.Charges)
	}
	if got, want := tr.list(), []string{"psp: closed->open"}; !slices.Equal(got, want) {
		t.Fatalf("transitions %q, want %q", got, want)
	}
	// Voids settle unknown outcomes, so they pass while the breaker is open.
	if v, err := b.Void(ctx, uuid.New()); err != nil || v.Status != payment.Voided {
		t.Fatalf("void through an open breaker: %+v, %v", v, err)
	}
}

func TestBreakerHalfOpensAndCloses(t *testing.T) {
	tests := []struct {
		name      string
		probe     string // token of the charge sent while half-open
		wantState payment.State
		want      []string
	}{
		{"a successful probe closes it", "tok_ok", payment.StateClosed,
			[]string{"closed->open", "open->half-open", "half-open->closed"}},
		{"a declined probe closes it", "tok_decline", payment.StateClosed,
			[]string{"closed->open", "open->half-open", "half-open->closed"}},
		{"a failed probe reopens it", "tok_error", payment.StateOpen,
			[]string{"closed->open", "open->half-open", "half-open->open"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, base := startFake(t, fake.Config{}, nil)
			var tr transitions
			b := payment.NewBreaker(payment.NewHTTPClient(base, 0),
				payment.BreakerConfig{ConsecutiveFailures: 2, OpenTimeout: 20 * time.Millisecond}, tr.record)
			ctx := context.Background()
			for range 2 {
				_, err := b.Charge(ctx, charge("tok_error"))
				checkErr(t, err, payment.ErrUnavailable)
			}
			waitState(t, b, payment.StateHalfOpen)
			if int(b.State()) != 1 {
				t.Fatalf("half-open gauge value %d, want 1", int(b.State()))
			}
			if _, err := b.Charge(ctx, charge(tc.probe)); (err != nil) != (tc.probe == "tok_error") {
				t.Fatalf("probe: %v", err)
			}
			// The open state lasts 20ms, so a reopened breaker may already be half-open again.
			if got := b.State(); got != tc.wantState && !(tc.wantState == payment.StateOpen && got == payment.StateHalfOpen) {
				t.Fatalf("state %s after the probe, want %s", got, tc.wantState)
			}
			var want []string
			for _, w := range tc.want {
				want = append(want, "payment: "+w)
			}
			if got := tr.list(); !slices.Equal(got[:min(len(got), len(want))], want) {
				t.Fatalf("transitions %q, want %q", got, want)
			}
		})
	}
}

func TestBreakerDeclinesDoNotOpenIt(t *testing.T) {
	_, base := startFake(t, fake.Config{DeclineRate: 1}, nil)
	b := payment.NewBreaker(payment.NewHTTPClient(base, 0), payment.BreakerConfig{ConsecutiveFailures: 2}, nil)
	for i := range 10 {
		r, err := b.Charge(context.Background(), charge(fmt.Sprintf("tok_card_%d", i)))
		if err != nil || r.Status != payment.Declined {
			t.Fatalf("charge %d: %+v, %v; want a decline", i, r, err)
		}
	}
	if b.State() != payment.StateClosed {
		t.Fatalf("state %s after declines, want closed", b.State())
	}
}

// chargerFunc adapts a function to payment.Charger; it is not a payment.Settler.
type chargerFunc func(ctx context.Context, ch payment.Charge) (payment.Receipt, error)

func (f chargerFunc) Charge(ctx context.Context, ch payment.Charge) (payment.Receipt, error) {
	return f(ctx, ch)
}

func TestBreakerCountsOnlyProviderFailures(t *testing.T) {
	tests := []struct {
		name     string
		cancel   bool // cancel the caller's context before charging
		err      error
		wantOpen bool
	}{
		{"unavailable counts", false, payment.ErrUnavailable, true},
		{"unknown outcome counts", false, payment.ErrUnknownOutcome, true},
		{"the caller's own deadline counts", false, fmt.Errorf("%w: %w", payment.ErrUnknownOutcome, context.DeadlineExceeded), true},
		{"a canceled caller does not count", true, payment.ErrUnknownOutcome, false},
		{"a refused request does not count", false, errors.New("provider answered 400"), false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			calls := 0
			stub := chargerFunc(func(ctx context.Context, _ payment.Charge) (payment.Receipt, error) {
				calls++
				if ctx.Err() != nil {
					return payment.Receipt{}, fmt.Errorf("%w: %w", tc.err, ctx.Err())
				}
				return payment.Receipt{}, tc.err
			})
			b := payment.NewBreaker(stub, payment.BreakerConfig{ConsecutiveFailures: 1, OpenTimeout: time.Hour}, nil)
			ctx, cancel := context.WithCancel(context.Background())
			if tc.cancel {
				cancel()
			}
			defer cancel()
			_, err := b.Charge(ctx, charge("tok_ok"))
			if !errors.Is(err, tc.err) {
				t.Fatalf("error %v does not wrap %v", err, tc.err)
			}
			if open := b.State() == payment.StateOpen; open != tc.wantOpen {
				t.Fatalf("open %v, want %v", open, tc.wantOpen)
			}
			_, err = b.Charge(context.Background(), charge("tok_ok"))
			if refused := errors.Is(err, payment.ErrBreakerOpen); refused != tc.wantOpen || calls != 2-btoi(refused) {
				t.Fatalf("second charge: %v after %d calls", err, calls)
			}
		})
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

func TestBreakerPassThroughNeedsASettler(t *testing.T) {
	b := payment.NewBreaker(chargerFunc(func(context.Context, payment.Charge) (payment.Receipt, error) {
		return payment.Receipt{Status: payment.Succeeded}, nil
	}), payment.BreakerConfig{}, nil)
	if _, _, err := b.Lookup(context.Background(), uuid.New()); !errors.Is(err, errors.ErrUnsupported) {
		t.Fatalf("lookup: %v, want ErrUnsupported", err)
	}
	if _, err := b.Void(context.Background(), uuid.New()); !errors.Is(err, errors.ErrUnsupported) {
		t.Fatalf("void: %v, want ErrUnsupported", err)
	}
}

func TestStateString(t *testing.T) {
	for s, want := range map[payment.State]string{
		payment.StateClosed: "closed", payment.StateHalfOpen: "half-open", payment.StateOpen: "open", 7: "State(7)",
	} {
		if s.String() != want {
			t.Errorf("State(%d).String() = %q, want %q", int(s), s, want)
		}
	}
}
