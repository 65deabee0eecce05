package payment_test

import (
	"context"
	"errors"
	"net"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/fsctl/fsctl/internal/checkout/payment"
	"github.com/fsctl/fsctl/internal/checkout/payment/fake"
)

// startFake serves a fake provider for the test and returns it with its base URL.
func startFake(tb testing.TB, cfg fake.Config, now func() time.Time) (*fake.Provider, string) {
	tb.Helper()
	p := fake.New(cfg, now)
	srv := httptest.NewServer(p.Handler())
	tb.Cleanup(srv.Close)
	return p, srv.URL
}

// clock is a hand-wound clock for outage windows.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *clock { return &clock{t: time.Date(2025, 11, 28, 9, 0, 0, 0, time.UTC)} }

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func charge(token string) payment.Charge {
	return payment.Charge{OrderID: uuid.Must(uuid.NewV7()), AmountCents: 4999, Currency: "EUR", Token: token}
}

// errorClasses are the sentinel errors a caller branches on; each failing case names the one it
// wants and must match no other.
var errorClasses = []error{payment.ErrUnavailable, payment.ErrUnknownOutcome, payment.ErrBreakerOpen}

func checkErr(t *testing.T, err, want error) {
	t.Helper()
	if want == nil {
		if err != nil {
			t.Fatalf("unexpected error: %v", err)
		}
		return
	}
	if err == nil {
		t.Fatalf("no error, want %v", want)
	}
	for _, class := range errorClasses {
		if got := errors.Is(err, class); got != errors.Is(want, class) {
			t.Fatalf("error %q: errors.Is(%v) = %v", err, class, got)
		}
	}
}

func TestHTTPClientCharge(t *testing.T) {
	refused := func(t *testing.T) string {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := ln.Addr().String()
		ln.Close()
		return "http://" + addr
	}
	errPlain := errors.New("a plain error")
	tests := []struct {
		name       string
		cfg        fake.Config
		base       func(t *testing.T) string // overrides the fake
		timeout    time.Duration
		charge     payment.Charge
		wantStatus payment.Status
		wantErr    error
		wantInErr  string
		wantStats  fake.Stats
		// anyCharges: the client may give up before the fake counts the request, so only the
		// outcome counters are compared.
		anyCharges bool
	}{
		{name: "succeeded", charge: charge("tok_ok"), wantStatus: payment.Succeeded,
			wantStats: fake.Stats{Charges: 1, Succeeded: 1}},
		{name: "magic decline beats a zero rate", charge: charge("tok_decline"), wantStatus: payment.Declined,
			wantStats: fake.Stats{Charges: 1, Declined: 1}},
		{name: "decline rate", cfg: fake.Config{DeclineRate: 1}, charge: charge("tok_visa"), wantStatus: payment.Declined,
			wantStats: fake.Stats{Charges: 1, Declined: 1}},
		{name: "magic ok beats the rates", cfg: fake.Config{DeclineRate: 1, ErrorRate: 1}, charge: charge("tok_ok"),
			wantStatus: payment.Succeeded, wantStats: fake.Stats{Charges: 1, Succeeded: 1}},
		{name: "503 is unavailable", charge: charge("tok_error"), wantErr: payment.ErrUnavailable, wantInErr: "503",
			wantStats: fake.Stats{Charges: 1, Errors: 1}},
		{name: "error rate", cfg: fake.Config{ErrorRate: 1}, charge: charge("tok_visa"), wantErr: payment.ErrUnavailable,
			wantStats: fake.Stats{Charges: 1, Errors: 1}},
		{name: "timeout is an unknown outcome", cfg: fake.Config{Latency: time.Hour}, timeout: 300 * time.Millisecond,
			charge: charge("tok_ok"), wantErr: payment.ErrUnknownOutcome, anyCharges: true},
		{name: "invalid request is a plain error", charge: payment.Charge{OrderID: uuid.New(), AmountCents: -1, Currency: "EUR", Token: "tok_ok"},
			wantErr: errPlain, wantInErr: "400", wantStats: fake.Stats{Charges: 1, Rejected: 1}},
		{name: "connection refused is unavailable", base: refused, charge: charge("tok_ok"), wantErr: payment.ErrUnavailable},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, base := startFake(t, tc.cfg, nil)
			if tc.base != nil {
				base = tc.base(t)
			}
			r, err := payment.NewHTTPClient(base, tc.timeout).Charge(context.Background(), tc.charge)
			checkErr(t, err, tc.wantErr)
			if err != nil && !strings.Contains(err.Error(), tc.wantInErr) {
				t.Errorf("error %q does not mention %q", err, tc.wantInErr)
			}
			if r.Status != tc.wantStatus {
				t.Errorf("status %q, want %q", r.Status, tc.wantStatus)
			}
			if tc.wantStatus != "" && r.ID == "" {
				t.Error("receipt has no id")
			}
			if tc.base == nil {
				got := p.Stats()
				if tc.anyCharges {
					got.Charges = tc.wantStats.Charges
				}
				if got != tc.wantStats {
					t.Errorf("stats %+v, want %+v", got, tc.wantStats)
				}
			}
		})
	}
}

func TestHTTPClientChargeIsIdempotent(t *testing.T) {
	p, base := startFake(t, fake.Config{}, nil)
	c := payment.NewHTTPClient(base, 0)
	ctx := context.Background()
	tests := []struct {
		name          string
		first, second string // tokens of the first charge and its repeat
		want          payment.Status
	}{
		{"success repeats", "tok_ok", "tok_ok", payment.Succeeded},
		{"a decline stays a decline", "tok_decline", "tok_ok", payment.Declined},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ch := charge(tc.first)
			first, err := c.Charge(ctx, ch)
			if err != nil {
				t.Fatal(err)
			}
			ch.Token = tc.second
			again, err := c.Charge(ctx, ch)
			if err != nil {
				t.Fatal(err)
			}
			if first != again || again.Status != tc.want {
				t.Fatalf("first %+v, repeat %+v, want both %s", first, again, tc.want)
			}
		})
	}
	if s := p.Stats(); s.Replayed != 2 || s.Succeeded+s.Declined != 2 {
		t.Fatalf("stats %+v: want 2 recorded charges and 2 replays", s)
	}
	ch := charge("tok_ok")
	if _, err := c.Charge(ctx, ch); err != nil {
		t.Fatal(err)
	}
	ch.AmountCents++
	if _, err := c.Charge(ctx, ch); err == nil || !strings.Contains(err.Error(), "422") {
		t.Fatalf("reusing a key for another amount: %v, want a 422 error", err)
	}
}

func TestHTTPClientLookupAndVoid(t *testing.T) {
	_, base := startFake(t, fake.Config{}, nil)
	c := payment.NewHTTPClient(base, 0)
	ctx := context.Background()

	t.Run("lookup", func(t *testing.T) {
		ch := charge("tok_ok")
		if _, found, err := c.Lookup(ctx, ch.OrderID); err != nil || found {
			t.Fatalf("before the charge: found %v, err %v", found, err)
		}
		paid, err := c.Charge(ctx, ch)
		if err != nil {
			t.Fatal(err)
		}
		r, found, err := c.Lookup(ctx, ch.OrderID)
		if err != nil || !found || r != paid {
			t.Fatalf("after the charge: %+v found %v err %v, want %+v", r, found, err, paid)
		}
	})
	t.Run("void before charge refuses the charge", func(t *testing.T) {
		ch := charge("tok_ok")
		v, err := c.Void(ctx, ch.OrderID)
		if err != nil || v.Status != payment.Voided {
			t.Fatalf("void: %+v, %v", v, err)
		}
		r, err := c.Charge(ctx, ch)
		if err != nil || r.Status != payment.Voided {
			t.Fatalf("charge after void: %+v, %v; want a voided receipt", r, err)
		}
		if again, err := c.Void(ctx, ch.OrderID); err != nil || again != v {
			t.Fatalf("second void: %+v, %v; want %+v", again, err, v)
		}
	})
	t.Run("void after success answers the success", func(t *testing.T) {
		ch := charge("tok_ok")
		paid, err := c.Charge(ctx, ch)
		if err != nil {
			t.Fatal(err)
		}
		v, err := c.Void(ctx, ch.OrderID)
		if err != nil || v != paid {
			t.Fatalf("void: %+v, %v; want the paid receipt %+v", v, err, paid)
		}
	})
	t.Run("void after decline closes the key", func(t *testing.T) {
		ch := charge("tok_decline")
		if _, err := c.Charge(ctx, ch); err != nil {
			t.Fatal(err)
		}
		if v, err := c.Void(ctx, ch.OrderID); err != nil || v.Status != payment.Voided {
			t.Fatalf("void: %+v, %v", v, err)
		}
	})
}

func TestHTTPClientOutageWindow(t *testing.T) {
	clk := newClock()
	p, base := startFake(t, fake.Config{Outages: []fake.Window{{From: 10 * time.Second, To: 20 * time.Second}}}, clk.Now)
	c := payment.NewHTTPClient(base, 0)
	ctx := context.Background()
	paid := charge("tok_ok")
	if _, err := c.Charge(ctx, paid); err != nil {
		t.Fatalf("before the outage: %v", err)
	}

	clk.Advance(10 * time.Second)
	down := charge("tok_ok")
	_, err := c.Charge(ctx, down)
	checkErr(t, err, payment.ErrUnavailable)
	_, _, err = c.Lookup(ctx, paid.OrderID)
	checkErr(t, err, payment.ErrUnavailable)
	_, err = c.Void(ctx, paid.OrderID)
	checkErr(t, err, payment.ErrUnavailable)

	clk.Advance(10 * time.Second)
	if _, found, err := c.Lookup(ctx, down.OrderID); err != nil || found {
		t.Fatalf("the charge refused in the outage was recorded: found %v, err %v", found, err)
	}
	if r, err := c.Charge(ctx, down); err != nil || r.Status != payment.Succeeded {
		t.Fatalf("after the outage: %+v, %v", r, err)
	}
	if s := p.Stats(); s.Errors != 3 || s.Succeeded != 2 {
		t.Fatalf("stats %+v: want 3 errors and 2 successes", s)
	}
}

func TestHTTPClientCallerContext(t *testing.T) {
	p, base := startFake(t, fake.Config{}, nil)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := payment.NewHTTPClient(base, 0).Charge(ctx, charge("tok_ok"))
	if !errors.Is(err, context.Canceled) || errors.Is(err, payment.ErrUnavailable) {
		t.Fatalf("charge with a canceled context: %v; want context.Canceled and not unavailable", err)
	}
	if s := p.Stats(); s.Charges != 0 {
		t.Fatalf("a canceled charge reached the provider: %+v", s)
	}
}
