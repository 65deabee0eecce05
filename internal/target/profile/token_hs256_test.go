package profile

import (
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// TestHS256MintsWhatGolangJWTMints holds the laid-out HS256 minter to golang-jwt's bytes for the
// same claims: templates, escapes, numbers, nested values and a profile claim over exp.
func TestHS256MintsWhatGolangJWTMints(t *testing.T) {
	secret := []byte("a-secret-of-more-than-16-bytes")
	now := time.Unix(1_796_000_000, 0)
	for name, claims := range map[string]map[string]any{
		"none":      nil,
		"templates": {"sub": "${user}", "sale": "${sale}", "name": "buyer ${user} of ${sale}"},
		"escapes":   {"sub": "<${user}> & \"q\" \u2028", "aud": "shop"},
		"values":    {"n": 42, "f": 1.5, "ok": true, "nothing": nil, "roles": []any{"a", "b"}, "ctx": map[string]any{"z": 1, "a": "x"}},
		"overrides": {"exp": 7, "iat": "${user}", "sub": "${user}"},
	} {
		h, err := newHS256(claims, secret)
		if err != nil {
			t.Fatal(err)
		}
		for _, user := range []string{"ann", "blast-123456", "", "é<&>\x7f\x01\\\"", "\xff"} {
			got, err := h.mint(user, "bf", now, time.Hour)
			if err != nil {
				t.Fatal(err)
			}
			mc := jwt.MapClaims{"iat": now.Unix(), "exp": now.Add(time.Hour).Unix()}
			for k, v := range claims {
				if s, ok := v.(string); ok {
					v = Render(s, Vars{"user": user, "sale": "bf"})
				}
				mc[k] = v
			}
			want, err := jwt.NewWithClaims(jwt.SigningMethodHS256, mc).SignedString(secret)
			if err != nil {
				t.Fatal(err)
			}
			if got != want {
				t.Errorf("%s, user %q:\n got %s\nwant %s", name, user, got, want)
			}
		}
	}
}

func BenchmarkHS256Mint(b *testing.B) {
	m, err := Default().Minter("a-secret-of-more-than-16-bytes")
	if err != nil {
		b.Fatal(err)
	}
	now := time.Now()
	b.Run("laid-out", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := m.Mint("blast-123456", "bf", now, time.Hour); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("golang-jwt", func(b *testing.B) {
		b.ReportAllocs()
		plain := *m
		plain.hs = nil
		for b.Loop() {
			if _, err := plain.Mint("blast-123456", "bf", now, time.Hour); err != nil {
				b.Fatal(err)
			}
		}
	})
}
