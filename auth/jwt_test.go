package auth

import (
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/fsctl/fsctl/outcome"
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
