package auth

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"math/big"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/fsctl/fsctl/internal/contract/outcome"
)

const (
	testIssuer   = "https://issuer.example"
	testAudience = "fsctl-checkout"
)

// issuer is a real IssuerHandler on a loopback TLS server whose key set the test changes, and
// which counts the fetches of its JWKS.
type issuer struct {
	srv     *httptest.Server
	caFile  string
	mu      sync.Mutex
	keys    []*SigningKey
	down    bool
	fetches atomic.Int64
}

func newIssuer(t testing.TB, keys ...*SigningKey) *issuer {
	t.Helper()
	is := &issuer{keys: keys}
	h := IssuerHandler(testIssuer, func() ([]*SigningKey, error) {
		is.mu.Lock()
		defer is.mu.Unlock()
		return is.keys, nil
	})
	is.srv = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == JWKSPath {
			is.fetches.Add(1)
		}
		is.mu.Lock()
		down := is.down
		is.mu.Unlock()
		if down {
			http.Error(w, "maintenance", http.StatusServiceUnavailable)
			return
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(is.srv.Close)
	is.caFile = filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(is.caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: is.srv.Certificate().Raw}), 0o644); err != nil {
		t.Fatal(err)
	}
	return is
}

func (is *issuer) publish(keys ...*SigningKey) {
	is.mu.Lock()
	is.keys = keys
	is.mu.Unlock()
}

func (is *issuer) setDown(down bool) {
	is.mu.Lock()
	is.down = down
	is.mu.Unlock()
}

func (is *issuer) config() JWKSConfig {
	// An hour between unknown-kid fetches: any second fetch in a test is the rate limit failing.
	return JWKSConfig{URL: is.srv.URL + JWKSPath, Issuer: testIssuer, Audience: testAudience, CAFile: is.caFile, UnknownKIDRefresh: time.Hour}
}

func (is *issuer) verifier(t *testing.T, now func() time.Time) *Verifier {
	t.Helper()
	v, err := NewJWKSVerifier(t.Context(), secret, is.config(), now)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func mustKey(t testing.TB, k crypto.Signer, err error) *SigningKey {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
	sk, err := NewSigningKey(k)
	if err != nil {
		t.Fatal(err)
	}
	return sk
}

func ecKey(t testing.TB) *SigningKey {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	return mustKey(t, k, err)
}

func rsaKey(t testing.TB) *SigningKey {
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	return mustKey(t, k, err)
}

func edKey(t testing.TB) *SigningKey {
	_, k, err := ed25519.GenerateKey(rand.Reader)
	return mustKey(t, k, err)
}

func TestJWKSVerifier(t *testing.T) {
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	rk, ek, dk := rsaKey(t), ecKey(t), edKey(t)
	is := newIssuer(t, rk, ek, dk)
	v := is.verifier(t, func() time.Time { return now })

	mint := func(k *SigningKey, iss, aud string, at time.Time) string {
		tok, err := k.Mint("buyer-7", iss, aud, at, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	claims := jwt.RegisteredClaims{Subject: "buyer-7", Issuer: testIssuer, Audience: jwt.ClaimStrings{testAudience}, ExpiresAt: jwt.NewNumericDate(now.Add(time.Minute))}
	none, _ := jwt.NewWithClaims(jwt.SigningMethodNone, claims).SignedString(jwt.UnsafeAllowNoneSignatureType)
	// HS/RS confusion: HS256 with the RSA public key as the secret, in the two spellings an
	// attacker would try (its PEM and its modulus), with the published kid.
	pubDER, _ := x509.MarshalPKIXPublicKey(rk.Public())
	var confused []string
	for _, asSecret := range [][]byte{pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pubDER}), rk.Public().(*rsa.PublicKey).N.Bytes()} {
		hs := jwt.NewWithClaims(jwt.SigningMethodHS256, claims)
		hs.Header["kid"] = rk.KID
		tok, _ := hs.SignedString(asSecret)
		confused = append(confused, tok)
	}
	// A key the issuer never published, claiming a published kid.
	impostor := ecKey(t)
	impostor.KID = ek.KID

	tests := []struct {
		name, token, msg string
	}{
		{"RS256", mint(rk, testIssuer, testAudience, now), ""},
		{"ES256", mint(ek, testIssuer, testAudience, now), ""},
		{"EdDSA", mint(dk, testIssuer, testAudience, now), ""},
		{"alg none", none, "signature invalid"},
		{"HS256 with the public key's PEM", confused[0], "signature invalid"},
		{"HS256 with the public key's modulus", confused[1], "signature invalid"},
		{"the HS256 secret", func() string { s, _ := Mint(secret, "buyer-7", now, time.Minute); return s }(), "signature invalid"},
		{"impostor key", mint(impostor, testIssuer, testAudience, now), "signature invalid"},
		{"wrong issuer", mint(ek, "https://evil.example", testAudience, now), "issuer"},
		{"no issuer", mint(ek, "", testAudience, now), "no iss claim"},
		{"wrong audience", mint(ek, testIssuer, "another-app", now), "audience"},
		{"no audience", mint(ek, testIssuer, "", now), "no aud claim"},
		{"expired", mint(ek, testIssuer, testAudience, now.Add(-time.Hour)), "expired"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			user, err := v.Verify(tc.token)
			if tc.msg == "" {
				if err != nil || user != "buyer-7" {
					t.Fatalf("got (%q, %v), want buyer-7", user, err)
				}
				return
			}
			if outcome.CodeOf(err) != outcome.Unauthorized || !strings.Contains(err.Error(), tc.msg) {
				t.Fatalf("got (%q, %v), want Unauthorized containing %q", user, err, tc.msg)
			}
		})
	}
	if err := v.Ready(t.Context()); err != nil {
		t.Fatalf("ready: %v", err)
	}
	if n := is.fetches.Load(); n != 1 {
		t.Fatalf("%d fetches of the key set, want the one at the start", n)
	}
}

// TestJWKSRotation: a token signed by a key the issuer adds later is accepted once the set
// changes (its unknown kid fetches the set again), and a client spraying made-up kids does not
// make a fetch each.
func TestJWKSRotation(t *testing.T) {
	old, next := ecKey(t), ecKey(t)
	is := newIssuer(t, old)
	v := is.verifier(t, nil)
	tok := func(k *SigningKey) string {
		s, err := k.Mint("ann", testIssuer, testAudience, time.Now(), time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	if _, err := v.Verify(tok(old)); err != nil {
		t.Fatalf("the first key: %v", err)
	}
	is.publish(old, next)
	if user, err := v.Verify(tok(next)); err != nil || user != "ann" {
		t.Fatalf("the rotated key after the set changed: (%q, %v)", user, err)
	}
	if n := is.fetches.Load(); n != 2 {
		t.Fatalf("%d fetches, want 2: the start and the new kid", n)
	}
	for range 50 {
		if _, err := v.Verify(tok(ecKey(t))); outcome.CodeOf(err) != outcome.Unauthorized || !strings.Contains(err.Error(), "signing key unknown") {
			t.Fatalf("a made-up kid: %v, want Unauthorized naming the unknown key", err)
		}
	}
	if n := is.fetches.Load(); n != 2 {
		t.Fatalf("50 made-up kids made %d more fetches, want none within the rate limit", n-2)
	}
	// Both keys still verify from the cached set.
	for _, k := range []*SigningKey{old, next} {
		if _, err := v.Verify(tok(k)); err != nil {
			t.Fatalf("kid %s: %v", k.KID, err)
		}
	}
}

// TestJWKSIssuerDownAtStart: the verifier starts without its issuer, refuses every token and is
// not ready (saying why) until the issuer answers; then a readiness check loads the set, with no
// token needed to make it look.
func TestJWKSIssuerDownAtStart(t *testing.T) {
	k := ecKey(t)
	is := newIssuer(t, k)
	is.setDown(true)
	cfg := is.config()
	cfg.UnknownKIDRefresh = 10 * time.Millisecond
	v, err := NewJWKSVerifier(t.Context(), secret, cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	tok, _ := k.Mint("ann", testIssuer, testAudience, time.Now(), time.Minute)
	if _, err := v.Verify(tok); outcome.CodeOf(err) != outcome.Unauthorized {
		t.Fatalf("with no key: %v, want Unauthorized", err)
	}
	err = v.Ready(t.Context())
	if err == nil || !strings.Contains(err.Error(), "no signing key from "+cfg.URL) || !strings.Contains(err.Error(), "503") {
		t.Fatalf("ready while the issuer is down: %v", err)
	}
	is.setDown(false)
	if err := v.Ready(t.Context()); err != nil {
		t.Fatalf("ready once the issuer answers: %v", err)
	}
	if user, err := v.Verify(tok); err != nil || user != "ann" {
		t.Fatalf("after the issuer came back: (%q, %v)", user, err)
	}
}

func TestJWKSConfigRefused(t *testing.T) {
	for name, cfg := range map[string]JWKSConfig{
		"plain http beyond loopback": {URL: "http://idp.example.com/jwks.json"},
		"not a URL":                  {URL: "jwks.json"},
		"missing CA file":            {URL: "https://127.0.0.1:1/jwks.json", CAFile: filepath.Join(t.TempDir(), "nope.pem")},
	} {
		if _, err := NewJWKSVerifier(t.Context(), secret, cfg, nil); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	// http on loopback is fine (a sidecar issuer); nothing listens there, which is no error.
	if _, err := NewJWKSVerifier(t.Context(), secret, JWKSConfig{URL: "http://127.0.0.1:1/jwks.json", Timeout: time.Second}, nil); err != nil {
		t.Errorf("http on loopback: %v", err)
	}
}

// TestThumbprint: RFC 7638's own example key has the thumbprint the RFC gives.
func TestThumbprint(t *testing.T) {
	n, _ := base64.RawURLEncoding.DecodeString("0vx7agoebGcQSuuPiLJXZptN9nndrQmbXEps2aiAFbWhM78LhWx4cbbfAAtVT86zwu1RK7aPFFxuhDR1L6tSoc_BJECPebWKRXjBZCiFV4n3oknjhMstn64tZ_2W-5JsGY4Hc5n9yBXArwl93lqt7_RN5w6Cf0h4QyQ5v-65YGjQR0_FDW2QvzqY368QQMicAtaSqzs8KJZgnYb9c7d0zgdAZHzu6qMQvRL5hajrn1n91CbOpbISD08qNLyrdkt-bFTWhAI4vMQFh6WeZu0fM4lFd2NcRwr3XPksINHaQ-G_xBniIqbw0Ls1jF44-csFCur-kEgU8awapJzKnqDKgw")
	got, err := Thumbprint(&rsa.PublicKey{N: new(big.Int).SetBytes(n), E: 65537})
	if err != nil || got != "NzbLsXh8uDCcd-6MNwXF4W_7noWXFZAfHkxZsRGC9Xs" {
		t.Fatalf("thumbprint %q, %v", got, err)
	}
}

// TestSigningKeyFiles: a key file in each PEM form loads with its algorithm and thumbprint; the
// JWKS and the discovery document publish it under that kid.
func TestSigningKeyFiles(t *testing.T) {
	ec, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	sec1, _ := x509.MarshalECPrivateKey(ec)
	pkcs8, _ := x509.MarshalPKCS8PrivateKey(ec)
	p384, _ := ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	p384der, _ := x509.MarshalPKCS8PrivateKey(p384)
	dir := t.TempDir()
	write := func(name, typ string, der []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	want, _ := Thumbprint(&ec.PublicKey)
	for _, path := range []string{write("sec1.pem", "EC PRIVATE KEY", sec1), write("pkcs8.pem", "PRIVATE KEY", pkcs8)} {
		k, err := LoadSigningKey(path)
		if err != nil || k.Method != jwt.SigningMethodES256 || k.KID != want {
			t.Fatalf("%s: %+v, %v", path, k, err)
		}
	}
	if _, err := LoadSigningKey(write("p384.pem", "PRIVATE KEY", p384der)); err == nil || !strings.Contains(err.Error(), "P-256") {
		t.Fatalf("a P-384 key: %v", err)
	}
	if _, err := LoadSigningKey(write("k.pem", "PRIVATE KEY", []byte("s3cr3t"))); err == nil || strings.Contains(err.Error(), "s3cr3t") {
		t.Fatalf("junk: %v (the error must not hold the file's contents)", err)
	}

	k, _ := LoadSigningKey(filepath.Join(dir, "pkcs8.pem"))
	is := newIssuer(t, k)
	var set struct {
		Keys []map[string]string `json:"keys"`
	}
	getJSON(t, is, JWKSPath, &set)
	if len(set.Keys) != 1 || set.Keys[0]["kid"] != want || set.Keys[0]["alg"] != "ES256" || set.Keys[0]["use"] != "sig" || set.Keys[0]["d"] != "" {
		t.Fatalf("jwks %v", set.Keys)
	}
	var disco map[string]any
	getJSON(t, is, DiscoveryPath, &disco)
	if disco["issuer"] != testIssuer || disco["jwks_uri"] != testIssuer+JWKSPath {
		t.Fatalf("discovery %v", disco)
	}
}

func getJSON(t *testing.T, is *issuer, path string, v any) {
	t.Helper()
	resp, err := is.srv.Client().Get(is.srv.URL + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		t.Fatal(err)
	}
}

// FuzzJWKSVerify: the JWKS verifier never panics on a token, refuses with Unauthorized only,
// and accepts nothing but the token its issuer's key signed.
func FuzzJWKSVerify(f *testing.F) {
	k := ecKey(f)
	good, _ := k.Mint("u", testIssuer, testAudience, time.Now(), time.Hour)
	f.Add(good)
	f.Add("a.b.c")
	f.Add("eyJhbGciOiJub25lIn0.eyJzdWIiOiJ1In0.")
	f.Add("eyJhbGciOiJFUzI1NiIsImtpZCI6MX0.e30.")
	is := newIssuer(f, k)
	v, err := NewJWKSVerifier(f.Context(), secret, is.config(), nil)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, token string) {
		user, err := v.Verify(token)
		if err != nil {
			if outcome.CodeOf(err) != outcome.Unauthorized {
				t.Fatalf("rejection %v is not Unauthorized", err)
			}
			return
		}
		if token != good {
			t.Fatalf("accepted a token its issuer did not sign: %q (user %q)", token, user)
		}
	})
}
