package profile

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"io"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/fsctl/fsctl/internal/checkout/auth"
)

const (
	keyIssuer   = "https://127.0.0.1:18443"
	keyAudience = "fsctl-checkout"
)

// issuerKey writes a fresh ES256 key file and points the bundled profile's variables at it, as
// fsctl stack env does on a secure stack.
func issuerKey(tb testing.TB) *auth.SigningKey {
	tb.Helper()
	ec, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		tb.Fatal(err)
	}
	der, _ := x509.MarshalPKCS8PrivateKey(ec)
	path := filepath.Join(tb.TempDir(), "key.pem")
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), 0o600); err != nil {
		tb.Fatal(err)
	}
	tb.Setenv("FSCTL_JWT_KEY", path)
	tb.Setenv("FSCTL_JWT_ISSUER", keyIssuer)
	tb.Setenv("FSCTL_JWT_AUDIENCE", keyAudience)
	k, err := auth.LoadSigningKey(path)
	if err != nil {
		tb.Fatal(err)
	}
	return k
}

// TestBundledProfileSignsWithTheIssuerKey: with FSCTL_JWT_KEY set, the bundled profile's buyers
// carry ES256 tokens with the key's kid, iss and aud, which a JWKS verifier of that issuer
// accepts; the --jwt-secret default no longer replaces the key, a given secret does.
func TestBundledProfileSignsWithTheIssuerKey(t *testing.T) {
	k := issuerKey(t)
	p := Default()
	if got := p.SecretOverride("flag-default-secret-0123", false); got != "" {
		t.Fatalf("the flag's default replaces the key: %q", got)
	}
	m, err := p.Minter(p.SecretOverride("flag-default-secret-0123", false))
	if err != nil {
		t.Fatal(err)
	}
	tok, err := m.Mint("blast-7", "bf", time.Now(), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	parsed, _, err := jwt.NewParser().ParseUnverified(tok, jwt.MapClaims{})
	if err != nil || parsed.Header["alg"] != "ES256" || parsed.Header["kid"] != k.KID {
		t.Fatalf("header %v, %v; want ES256 with kid %s", parsed.Header, err, k.KID)
	}

	srv := httptest.NewTLSServer(auth.IssuerHandler(keyIssuer, func() ([]*auth.SigningKey, error) { return []*auth.SigningKey{k}, nil }))
	defer srv.Close()
	ca := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o644); err != nil {
		t.Fatal(err)
	}
	v, err := auth.NewJWKSVerifier(t.Context(), []byte("server-own-secret-0123456789"),
		auth.JWKSConfig{URL: srv.URL + auth.JWKSPath, Issuer: keyIssuer, Audience: keyAudience, CAFile: ca}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if user, err := v.Verify(tok); err != nil || user != "blast-7" {
		t.Fatalf("the JWKS verifier: (%q, %v)", user, err)
	}

	// A secret given on the command line wins: HS256, what an HS256 server checks.
	hs, err := p.Minter(p.SecretOverride("a-given-secret-0123456789", true))
	if err != nil {
		t.Fatal(err)
	}
	tok, _ = hs.Mint("blast-7", "bf", time.Now(), time.Hour)
	if parsed, _, _ := jwt.NewParser().ParseUnverified(tok, jwt.MapClaims{}); parsed.Header["alg"] != "HS256" {
		t.Fatalf("with a given secret: %v, want HS256", parsed.Header)
	}

	t.Setenv("FSCTL_JWT_KEY", filepath.Join(t.TempDir(), "missing.pem"))
	if _, err := p.Minter(""); err == nil || !strings.Contains(err.Error(), "$FSCTL_JWT_KEY") {
		t.Fatalf("a missing key file: %v", err)
	}
}

func TestKeyEnvFields(t *testing.T) {
	for name, tc := range map[string]struct{ from, to, want string }{
		"issuerEnv without keyEnv": {"  secretEnv: SHOP_SECRET\n", "  secretEnv: SHOP_SECRET\n  issuerEnv: ISS\n", "token.keyEnv"},
		"keyEnv on a token file":   {"  type: hs256\n  secretEnv: SHOP_SECRET\n", "  type: file\n  file: t.txt\n  keyEnv: K\n", "token.keyEnv"},
	} {
		_, err := Parse([]byte(strings.Replace(base, tc.from, tc.to, 1)), "t", "")
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error at %s", name, err, tc.want)
		}
	}
}

// BenchmarkMintES256 mints a 50,000-buyer burst's tokens with the secure stack's ES256 issuer
// key (what blast prepares before a release, and profile tokens writes) on every CPU; beside it
// the same with HS256. One op is the whole 50,000.
func BenchmarkMintES256(b *testing.B) {
	const buyers = 50_000
	issuerKey(b)
	for _, bc := range []struct{ name, secret string }{{"es256", ""}, {"hs256", "a-benchmark-secret-0123456789"}} {
		b.Run(bc.name, func(b *testing.B) {
			m, err := Default().Minter(bc.secret)
			if err != nil {
				b.Fatal(err)
			}
			now := time.Now()
			for b.Loop() {
				if err := m.WriteTokens(context.Background(), io.Discard, "bf", "blast-", buyers, now, time.Hour, nil); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(buyers)*float64(b.N)/b.Elapsed().Seconds(), "tokens/s")
		})
	}
}
