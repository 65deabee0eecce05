package auth

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/fsctl/fsctl/internal/contract/outcome"
)

var secret = []byte("0123456789abcdef0123456789abcdef")

func TestVerify(t *testing.T) {
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	v, err := NewVerifier(secret, func() time.Time { return now })
	if err != nil {
		t.Fatal(err)
	}
	good, _ := Mint(secret, "user-1@example.com", now, time.Minute)
	expired, _ := Mint(secret, "u", now.Add(-time.Hour), time.Minute)
	forged, _ := Mint([]byte("another-secret-another-secret!!"), "u", now, time.Minute)
	none := jwt.NewWithClaims(jwt.SigningMethodNone, jwt.RegisteredClaims{Subject: "u", ExpiresAt: jwt.NewNumericDate(now.Add(time.Minute))})
	noneTok, _ := none.SignedString(jwt.UnsafeAllowNoneSignatureType)
	noExp := jwt.NewWithClaims(jwt.SigningMethodHS256, jwt.RegisteredClaims{Subject: "u"})
	noExpTok, _ := noExp.SignedString(secret)
	badSub := jwt.NewWithClaims(jwt.SigningMethodHS256, jwt.RegisteredClaims{Subject: "has space", ExpiresAt: jwt.NewNumericDate(now.Add(time.Minute))})
	badSubTok, _ := badSub.SignedString(secret)

	tests := []struct {
		name, header, user, msg string
	}{
		{"valid", "Bearer " + good, "user-1@example.com", ""},
		{"lowercase scheme", "bearer " + good, "user-1@example.com", ""},
		{"missing", "", "", "missing"},
		{"basic scheme", "Basic abc", "", "Bearer"},
		{"expired", "Bearer " + expired, "", "expired"},
		{"forged", "Bearer " + forged, "", "signature"},
		{"alg none", "Bearer " + noneTok, "", "invalid"},
		{"no exp", "Bearer " + noExpTok, "", "exp"},
		{"bad sub", "Bearer " + badSubTok, "", "sub"},
		{"garbage", "Bearer a.b.c", "", "invalid"},
		{"huge", "Bearer " + strings.Repeat("a", 5000), "", "longer"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			user, err := v.UserFromHeader(tc.header)
			if tc.msg == "" {
				if err != nil || user != tc.user {
					t.Fatalf("got (%q, %v), want %q", user, err, tc.user)
				}
				return
			}
			if outcome.CodeOf(err) != outcome.Unauthorized || !strings.Contains(err.Error(), tc.msg) {
				t.Fatalf("got (%q, %v), want Unauthorized containing %q", user, err, tc.msg)
			}
		})
	}
}

// TestOnlyCompactTokens: a signed token with a CR, an LF or a space inserted (which Go's base64
// decoder would skip) is refused, not verified as the token it was copied from.
func TestOnlyCompactTokens(t *testing.T) {
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	good, err := Mint(secret, "u", now, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	v, _ := NewVerifier(secret, func() time.Time { return now })
	if _, err := v.Verify(good); err != nil {
		t.Fatalf("the signed token: %v", err)
	}
	cut := len(good) - 6
	for _, c := range []string{"\r", "\n", " ", "="} {
		bad := good[:cut] + c + good[cut:]
		if user, err := v.Verify(bad); err == nil || outcome.CodeOf(err) != outcome.Unauthorized {
			t.Errorf("%q inserted: user %q, %v; want Unauthorized", c, user, err)
		}
	}
}

func TestShortSecretRejected(t *testing.T) {
	if _, err := NewVerifier([]byte("short"), nil); err == nil {
		t.Fatal("a 5-byte secret was accepted")
	}
}

// FuzzUserFromHeader checks the token check never panics, rejects with Unauthorized only, and
// never accepts a token it did not sign.
func FuzzUserFromHeader(f *testing.F) {
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	good, _ := Mint(secret, "u", now, time.Minute)
	f.Add("Bearer " + good)
	f.Add("Bearer a.b.c")
	f.Add("bearer")
	f.Add("Bearer eyJhbGciOiJub25lIn0.eyJzdWIiOiJ1In0.")
	v, _ := NewVerifier(secret, func() time.Time { return now })
	f.Fuzz(func(t *testing.T, header string) {
		user, err := v.UserFromHeader(header)
		if err != nil {
			if outcome.CodeOf(err) != outcome.Unauthorized {
				t.Fatalf("rejection %v is not Unauthorized", err)
			}
			return
		}
		if header != "Bearer "+good && header != "bearer "+good && !strings.HasSuffix(header, good) {
			t.Fatalf("accepted a token it did not sign: %q (user %q)", header, user)
		}
	})
}

// TestVerifiedCache: a token seen before is answered from the cache, but its expiry still counts,
// a token differing in any byte is checked in full, and a refused token is never remembered.
func TestVerifiedCache(t *testing.T) {
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	clock := now
	v, err := NewVerifier(secret, func() time.Time { return clock })
	if err != nil {
		t.Fatal(err)
	}
	good, _ := Mint(secret, "buyer-1", now, time.Minute)
	for i := range 3 {
		if user, err := v.Verify(good); err != nil || user != "buyer-1" {
			t.Fatalf("check %d: (%q, %v), want buyer-1", i, user, err)
		}
	}
	if _, ok := v.cache.get(good); !ok {
		t.Fatal("a verified token was not remembered")
	}
	tampered := good[:len(good)-2] + string('A'+(good[len(good)-2]-'A'+1)%26) + good[len(good)-1:]
	if _, err := v.Verify(tampered); err == nil {
		t.Fatalf("a token with a changed signature byte was accepted after the good one was cached")
	}
	forged, _ := Mint([]byte("another-secret-another-secret!!"), "buyer-1", now, time.Minute)
	for range 2 {
		if _, err := v.Verify(forged); outcome.CodeOf(err) != outcome.Unauthorized {
			t.Fatalf("forged token: %v, want Unauthorized every time", err)
		}
	}
	if _, ok := v.cache.get(forged); ok {
		t.Fatal("a refused token was remembered")
	}
	clock = now.Add(time.Minute + Leeway - time.Millisecond)
	if _, err := v.Verify(good); err != nil {
		t.Fatalf("within the leeway: %v", err)
	}
	clock = now.Add(time.Minute + Leeway)
	if _, err := v.Verify(good); err == nil || !strings.Contains(err.Error(), "expired") {
		t.Fatalf("a cached token past its expiry: %v, want expired", err)
	}
}

// TestVerifiedCacheIsBounded: the cache keeps at most two generations, however many tokens pass.
func TestVerifiedCacheIsBounded(t *testing.T) {
	c := newVerifiedCache(time.Now)
	for i := range 3*verifiedCacheSize + 7 {
		c.put(strconv.Itoa(i), verified{sub: "u"})
	}
	if n := len(c.cur) + len(c.prev); n > 2*verifiedCacheSize {
		t.Fatalf("%d entries, want at most %d", n, 2*verifiedCacheSize)
	}
	if _, ok := c.get(strconv.Itoa(3*verifiedCacheSize + 6)); !ok {
		t.Fatal("the newest entry is gone")
	}
	if _, ok := c.get("0"); ok {
		t.Fatal("the oldest entry survived two generations")
	}
}

// TestVerifiedCacheForgetsIdleTokens: at a steady trickle of new buyers the cache holds a minute or
// two of them, not every buyer up to its size bound (the 30-minute soak's heap growth).
func TestVerifiedCacheForgetsIdleTokens(t *testing.T) {
	clock := time.Date(2026, 12, 3, 20, 0, 0, 0, time.UTC)
	c := newVerifiedCache(func() time.Time { return clock })
	for i := range 3000 { // 30 minutes at 100 new buyers a minute, one every 600 ms
		c.put(strconv.Itoa(i), verified{sub: "u"})
		if i == 1500 {
			if _, ok := c.get("1400"); !ok {
				t.Fatal("a token used a minute ago is gone")
			}
		}
		clock = clock.Add(600 * time.Millisecond)
	}
	if n := len(c.cur) + len(c.prev); n > 200 {
		t.Fatalf("%d tokens kept after 30 minutes at 100 a minute, want at most 2 minutes' worth (200)", n)
	}
	if _, ok := c.get("0"); ok {
		t.Fatal("the first buyer's token is still kept after 30 minutes")
	}
	if _, ok := c.get("2999"); !ok {
		t.Fatal("the newest token is gone")
	}
}
