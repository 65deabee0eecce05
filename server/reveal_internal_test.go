package server

import (
	"encoding/base64"
	"encoding/binary"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/fsctl/fsctl/internal/checkout/auth"
)

func testRevealer(tb testing.TB) *revealer {
	tb.Helper()
	v, err := auth.NewVerifier([]byte("reveal-test-secret-0123456789abcdef"), nil)
	if err != nil {
		tb.Fatal(err)
	}
	return newRevealer(v, prometheus.NewRegistry())
}

func TestPurchaseTokenBinding(t *testing.T) {
	rv := testRevealer(t)
	now := time.UnixMilli(1_800_000_000_000)
	tok := rv.sign("s", "i", "u", now.Add(time.Minute))
	if len(tok) != pathTokenChars {
		t.Fatalf("token %q is %d characters, want %d", tok, len(tok), pathTokenChars)
	}
	cases := []struct {
		what, token, sale, item, user string
		at                            time.Time
		want                          string
	}{
		{"its own", tok, "s", "i", "u", now, ""},
		{"the last valid millisecond", tok, "s", "i", "u", now.Add(time.Minute - time.Millisecond), ""},
		{"at expiry", tok, "s", "i", "u", now.Add(time.Minute), refusedExpired},
		{"another user", tok, "s", "i", "v", now, refusedInvalid},
		{"another item", tok, "s", "j", "u", now, refusedInvalid},
		{"another sale", tok, "t", "i", "u", now, refusedInvalid},
		// The separators keep the fields apart: ("s","iu") is not ("si","u").
		{"shifted fields", rv.sign("s", "iu", "x", now.Add(time.Minute)), "si", "u", "x", now, refusedInvalid},
		{"empty", "", "s", "i", "u", now, refusedMalformed},
		{"padded", tok + "=", "s", "i", "u", now, refusedMalformed},
		{"huge", strings.Repeat(tok, 100), "s", "i", "u", now, refusedMalformed},
		{"not base64", strings.Repeat("!", pathTokenChars), "s", "i", "u", now, refusedMalformed},
	}
	for _, c := range cases {
		if got := rv.verify(c.token, c.sale, c.item, c.user, c.at); got != c.want {
			t.Errorf("%s: verify = %q, want %q", c.what, got, c.want)
		}
	}
	// Another server secret: another key, and the path is refused.
	other, _ := auth.NewVerifier([]byte("another-secret-0123456789abcdef"), nil)
	if got := newRevealer(other, prometheus.NewRegistry()).verify(tok, "s", "i", "u", now); got != refusedInvalid {
		t.Errorf("token under another secret: %q, want invalid", got)
	}
	// Moving the expiry breaks the signature.
	b, _ := base64.RawURLEncoding.DecodeString(tok)
	binary.BigEndian.PutUint64(b[:8], binary.BigEndian.Uint64(b[:8])+3_600_000)
	if got := rv.verify(base64.RawURLEncoding.EncodeToString(b), "s", "i", "u", now.Add(2*time.Minute)); got != refusedInvalid {
		t.Errorf("extended expiry: %q, want invalid", got)
	}
}

// FuzzPurchaseToken feeds arbitrary tokens and purchases to the purchase-path verifier: it must
// never panic, and it may accept only the one canonical token the server itself signs for that
// buyer, sale, item and expiry, before that expiry.
func FuzzPurchaseToken(f *testing.F) {
	rv := testRevealer(f)
	now := time.UnixMilli(1_800_000_000_000)
	good := rv.sign("black-friday", "console", "buyer-1", now.Add(time.Minute))
	f.Add(good, "black-friday", "console", "buyer-1", int64(0))
	f.Add(good, "black-friday", "console", "buyer-2", int64(0))
	f.Add(good+"=", "black-friday", "console", "buyer-1", int64(0))
	f.Add(good[:31]+"B", "black-friday", "console", "buyer-1", int64(0))
	f.Add(good, "black-friday", "console", "buyer-1", int64(120_000))
	f.Add("", "s", "i", "u", int64(-1))
	f.Add(strings.Repeat("_", 32), "s", "i", "u", int64(1))
	f.Fuzz(func(t *testing.T, token, saleID, itemID, user string, offsetMS int64) {
		at := now.Add(time.Duration(offsetMS%(1<<40)) * time.Millisecond)
		if rv.verify(token, saleID, itemID, user, at) != "" {
			return
		}
		b, err := base64.RawURLEncoding.Strict().DecodeString(token)
		if err != nil || len(b) != pathTokenLen {
			t.Fatalf("accepted %q, which is not a %d-byte token", token, pathTokenLen)
		}
		exp := time.UnixMilli(int64(binary.BigEndian.Uint64(b[:8])))
		if !at.Before(exp) {
			t.Fatalf("accepted %q at %v, after its expiry %v", token, at, exp)
		}
		if want := rv.sign(saleID, itemID, user, exp); token != want {
			t.Fatalf("accepted %q for %q/%q/%q, but the server signs %q", token, saleID, itemID, user, want)
		}
	})
}

// BenchmarkPurchaseToken is what the reveal gate adds to a purchase (verify) and to the path
// endpoint (sign): one HMAC-SHA256 each, in memory.
func BenchmarkPurchaseToken(b *testing.B) {
	rv := testRevealer(b)
	now := time.UnixMilli(1_800_000_000_000)
	tok := rv.sign("black-friday", "console", "buyer-1", now.Add(time.Minute))
	b.Run("sign", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_ = rv.sign("black-friday", "console", "buyer-1", now.Add(time.Minute))
		}
	})
	b.Run("verify", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if rv.verify(tok, "black-friday", "console", "buyer-1", now) != "" {
				b.Fatal("refused its own token")
			}
		}
	})
}
