package room_test

import (
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/fsctl/fsctl/internal/checkout/auth"
	"github.com/fsctl/fsctl/internal/checkout/room"
	"github.com/fsctl/fsctl/internal/contract/outcome"
)

// testSecret is the HMAC key of the token and challenge tests.
func testSecret() []byte { return []byte("0123456789abcdef-room-test") }

// clock is a settable time source for the token and challenge tests.
type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

func newClock() *clock { return &clock{t: time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)} }

func TestTokens(t *testing.T) {
	t.Parallel()
	c := newClock()
	tokens, err := room.NewTokens(testSecret(), c.now)
	if err != nil {
		t.Fatal(err)
	}
	const ticket = "0123456789abcdef0123456789abcdef"
	tok, exp, err := tokens.Mint("alice", "sale-1", ticket, 2*time.Minute)
	if err != nil || !exp.Equal(c.t.Add(2*time.Minute)) {
		t.Fatalf("mint = %q, %s, %v", tok, exp, err)
	}
	if got, err := tokens.Verify(tok, "alice", "sale-1"); err != nil || got != ticket {
		t.Fatalf("verify = %q, %v; want ticket %s", got, err, ticket)
	}

	forger, _ := room.NewTokens([]byte("another-secret-of-16+"), c.now)
	forged, _, _ := forger.Mint("alice", "sale-1", ticket, time.Minute)
	claims := jwt.MapClaims{"sub": "alice", "sale": "sale-1", "jti": ticket, "typ": "admission", "exp": c.t.Add(time.Minute).Unix()}
	none, _ := jwt.NewWithClaims(jwt.SigningMethodNone, claims).SignedString(jwt.UnsafeAllowNoneSignatureType)
	hs512, _ := jwt.NewWithClaims(jwt.SigningMethodHS512, claims).SignedString(testSecret())
	noTyp := jwt.MapClaims{"sub": "alice", "sale": "sale-1", "jti": ticket, "exp": c.t.Add(time.Minute).Unix()}
	untyped, _ := jwt.NewWithClaims(jwt.SigningMethodHS256, noTyp).SignedString(testSecret())
	buyer, err := auth.Mint(testSecret(), "alice", c.t, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ name, token, user, sale, message string }{
		{"forged signature", forged, "alice", "sale-1", "not valid"},
		{"alg none", none, "alice", "sale-1", "not valid"},
		{"another algorithm", hs512, "alice", "sale-1", "not valid"},
		{"malformed", "not.a.jwt", "alice", "sale-1", "not valid"},
		{"no typ", untyped, "alice", "sale-1", "not an admission token"},
		{"buyer bearer token", buyer, "alice", "sale-1", "not an admission token"},
		{"another buyer", tok, "bob", "sale-1", "belongs to another buyer"},
		{"another sale", tok, "alice", "sale-2", "is for sale sale-1"},
		{"too long", strings.Repeat("a", 5000), "alice", "sale-1", "not valid"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := tokens.Verify(tc.token, tc.user, tc.sale)
			wantCode(t, err, outcome.NotAdmitted)
			if !strings.Contains(outcome.MessageOf(err), tc.message) {
				t.Errorf("message %q, want it to say %q", outcome.MessageOf(err), tc.message)
			}
		})
	}

	t.Run("expiry with 2 s of leeway", func(t *testing.T) {
		late := &clock{t: exp.Add(time.Second)}
		v, _ := room.NewTokens(testSecret(), late.now)
		if _, err := v.Verify(tok, "alice", "sale-1"); err != nil {
			t.Fatalf("1 s after expiry: %v, want accepted within the leeway", err)
		}
		late.t = exp.Add(3 * time.Second)
		_, err := v.Verify(tok, "alice", "sale-1")
		wantCode(t, err, outcome.NotAdmitted)
		if want := "expired at 2026-12-01T12:02:00Z"; !strings.Contains(outcome.MessageOf(err), want) {
			t.Errorf("message %q, want %q", outcome.MessageOf(err), want)
		}
	})

	if _, err := room.NewTokens([]byte("short"), nil); err == nil {
		t.Error("NewTokens accepted a 5-byte secret")
	}
	if _, _, err := tokens.Mint("alice", "sale-1", ticket, 0); err == nil {
		t.Error("Mint accepted a zero ttl")
	}
}
