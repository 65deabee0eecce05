package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/golang-jwt/jwt/v5"

	"github.com/fsctl/fsctl/internal/checkout/auth"
	"github.com/fsctl/fsctl/internal/harness/stack"
)

// clearIdPEnv unsets the identity provider's variables a shell on a secure stack would have.
func clearIdPEnv(t *testing.T) {
	for _, k := range []string{envJWKSURL, envJWKSCA, envJWTIssuer, envJWTAudience, envJWTKey} {
		t.Setenv(k, "")
	}
}

// TestServeJWKSFlags: the issuer's checks without a JWKS, or a JWKS anyone on the path could
// replace, are usage errors before any service is dialled.
func TestServeJWKSFlags(t *testing.T) {
	clearIdPEnv(t)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--jwt-issuer", "https://idp"}, "--jwt-issuer goes with --jwks-url"},
		{[]string{"--jwks-ca", "ca.pem"}, "--jwks-ca goes with --jwks-url"},
		{[]string{"--jwks-url", "http://idp.example.com/jwks.json"}, "must be https"},
	} {
		_, code, err := runCLI(t, append([]string{"serve", "--addr", "127.0.0.1:0", "--redis-url", "redis://127.0.0.1:1/0"}, tc.args...)...)
		if code != exitUsage || err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("serve %v: exit %d, %v; want a usage error naming %q", tc.args, code, err, tc.want)
		}
	}
	// A file that cannot be read is a command that cannot run (exit 1), as for every file.
	_, code, err := runCLI(t, "serve", "--addr", "127.0.0.1:0", "--redis-url", "redis://127.0.0.1:1/0",
		"--jwks-url", "https://idp.example.com/jwks.json", "--jwks-ca", filepath.Join(t.TempDir(), "none.pem"))
	if code != exitFailed || err == nil || !strings.Contains(err.Error(), "--jwks-ca") {
		t.Errorf("a missing --jwks-ca: exit %d, %v; want %d naming the flag", code, err, exitFailed)
	}
}

func writeES256Key(t *testing.T) string {
	t.Helper()
	ec, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, _ := x509.MarshalPKCS8PrivateKey(ec)
	path := filepath.Join(t.TempDir(), "key.pem")
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestTokenWithTheIssuerKey: fsctl token signs with --jwt-key (or FSCTL_JWT_KEY) as the issuer
// would, ES256 with the key's kid, iss and aud; a --jwt-secret given wins over the variable, and
// both flags at once are a usage error.
func TestTokenWithTheIssuerKey(t *testing.T) {
	clearIdPEnv(t)
	path := writeES256Key(t)
	key, err := auth.LoadSigningKey(path)
	if err != nil {
		t.Fatal(err)
	}
	parse := func(tok string) (*jwt.Token, jwt.MapClaims) {
		t.Helper()
		claims := jwt.MapClaims{}
		parsed, err := jwt.ParseWithClaims(strings.TrimSpace(tok), claims, func(*jwt.Token) (any, error) { return key.Public(), nil }, jwt.WithValidMethods([]string{"ES256"}))
		if err != nil {
			t.Fatalf("token %q: %v", tok, err)
		}
		return parsed, claims
	}
	out, _, err := runCLI(t, "token", "alice", "--jwt-key", path, "--jwt-issuer", "https://idp", "--jwt-audience", "shop")
	if err != nil {
		t.Fatal(err)
	}
	tok, claims := parse(out)
	if tok.Header["kid"] != key.KID || claims["sub"] != "alice" || claims["iss"] != "https://idp" || fmt.Sprint(claims["aud"]) != "[shop]" {
		t.Fatalf("header %v claims %v", tok.Header, claims)
	}

	t.Setenv(envJWTKey, path)
	out, _, err = runCLI(t, "token", "bob")
	if err != nil {
		t.Fatal(err)
	}
	if _, claims := parse(out); claims["sub"] != "bob" {
		t.Fatalf("from %s: %v", envJWTKey, claims)
	}
	out, _, err = runCLI(t, "token", "bob", "--jwt-secret", "a-given-secret-0123456789")
	if err != nil {
		t.Fatal(err)
	}
	if hs, _, _ := jwt.NewParser().ParseUnverified(strings.TrimSpace(out), jwt.MapClaims{}); hs == nil || hs.Method.Alg() != "HS256" {
		t.Fatalf("--jwt-secret over %s: %v", envJWTKey, hs)
	}
	if _, code, err := runCLI(t, "token", "bob", "--jwt-secret", "a-given-secret-0123456789", "--jwt-key", path); code != exitUsage {
		t.Fatalf("both: exit %d, %v", code, err)
	}
	if _, code, err := runCLI(t, "token", "bob", "--jwt-key", filepath.Join(t.TempDir(), "missing.pem")); code != exitFailed || !strings.Contains(err.Error(), "signing key") {
		t.Fatalf("a missing key: exit %d, %v", code, err)
	}
}

// TestStackEnvNamesTheIssuer: stack env on a secure stack prints the five variables of its
// identity provider: where its JWKS is, its iss and aud, the CA, and the key's file (never the
// key).
func TestStackEnvNamesTheIssuer(t *testing.T) {
	dir := t.TempDir()
	p := loopbackPorts(t, 5)
	rec := fmt.Sprintf(`{"redisPort":%d,"postgresPort":%d,"kafkaPort":%d,"kafkaControllerPort":%d,"secure":true,"issuerPort":%d}`, p[0], p[1], p[2], p[3], p[4])
	if err := os.WriteFile(filepath.Join(dir, stack.RecordFile), []byte(rec), 0o644); err != nil {
		t.Fatal(err)
	}
	out, _, code, err := runCLIBoth(t, "stack", "env", "--dir", dir)
	if err != nil {
		t.Fatalf("stack env: exit %d, %v", code, err)
	}
	issuer := fmt.Sprintf("https://127.0.0.1:%d", p[4])
	for _, want := range []string{
		"export FSCTL_JWKS_URL=" + issuer + "/.well-known/jwks.json\n",
		"export FSCTL_JWT_ISSUER=" + issuer + "\n",
		"export FSCTL_JWT_AUDIENCE=" + stack.IssuerAudience + "\n",
		"export FSCTL_JWKS_CA=" + filepath.Join(dir, "tls", "ca.pem") + "\n",
		"export FSCTL_JWT_KEY=" + filepath.Join(dir, "issuer", "key.pem") + "\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in\n%s", want, out)
		}
	}
	if strings.Contains(out, "PRIVATE KEY") {
		t.Errorf("stack env prints a key:\n%s", out)
	}
}
