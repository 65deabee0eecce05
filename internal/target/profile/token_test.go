package profile

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/fsctl/fsctl/internal/checkout/auth"
)

func TestHS256TokensVerifyWithTheBundledServersVerifier(t *testing.T) {
	secret := "a-secret-of-more-than-16-bytes"
	m, err := Default().Minter(secret)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	tok, err := m.Mint("ann", "bf", now, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	v, err := auth.NewVerifier([]byte(secret), nil)
	if err != nil {
		t.Fatal(err)
	}
	if user, err := v.Verify(tok); err != nil || user != "ann" {
		t.Fatalf("verify: %q %v", user, err)
	}
	if _, err := Default().Minter("short"); err == nil || !strings.Contains(err.Error(), "--jwt-secret is 5 bytes") {
		t.Fatalf("short secret: %v", err)
	}
	t.Setenv("FSCTL_JWT_SECRET", "")
	if _, err := Default().Minter(""); err == nil || !strings.Contains(err.Error(), "$FSCTL_JWT_SECRET is 0 bytes") {
		t.Fatalf("unset secret: %v", err)
	}
}

// rsaProfile is the base profile signing RS256 with a fresh key; it returns the public key.
func rsaProfile(t *testing.T) (*Profile, *rsa.PublicKey) {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "k.pem"), pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	doc := strings.Replace(base, "  type: hs256\n  secretEnv: SHOP_SECRET\n", "  type: rs256\n  keyFile: k.pem\n", 1)
	doc = strings.Replace(doc, `claims: {sub: "${user}"}`, `claims: {userId: "${user}", aud: "shop-${sale}", tier: 3}`, 1)
	p, err := Parse([]byte(doc), "rsa", dir)
	if err != nil {
		t.Fatal(err)
	}
	return p, &key.PublicKey
}

func TestRS256TokensAndTheTokenFileTheyWrite(t *testing.T) {
	p, pub := rsaProfile(t)
	m, err := p.Minter("")
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	var progress []int
	if err := m.WriteTokens(context.Background(), &out, "bf", "b-", 25, time.Now(), time.Hour, func(done, _ int) { progress = append(progress, done) }); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 25 || len(progress) == 0 || progress[len(progress)-1] != 25 {
		t.Fatalf("%d lines, progress %v", len(lines), progress)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // Ctrl-C: 50,000 RS256 tokens are a minute of CPU
	var none bytes.Buffer
	if err := m.WriteTokens(ctx, &none, "bf", "b-", 25, time.Now(), time.Hour, nil); err == nil || none.Len() > 0 {
		t.Fatalf("cancelled: %v, wrote %d bytes", err, none.Len())
	}
	for k, line := range lines {
		user, tok, _ := strings.Cut(line, " ")
		claims := jwt.MapClaims{}
		_, err := jwt.ParseWithClaims(tok, claims, func(*jwt.Token) (any, error) { return pub, nil },
			jwt.WithValidMethods([]string{"RS256"}), jwt.WithExpirationRequired())
		if err != nil || user != "b-"+strconv.Itoa(k) || claims["userId"] != user || claims["aud"] != "shop-bf" || claims["tier"] != float64(3) {
			t.Fatalf("line %d: %s: claims %v, err %v", k, user, claims, err)
		}
	}

	// The file they make is what a token-file profile reads: its users are the roster.
	path := filepath.Join(t.TempDir(), "tokens.txt")
	if err := os.WriteFile(path, out.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	fp := *p
	fp.Token = Token{Type: TokenFile, File: path}
	fm, err := fp.Minter("")
	if err != nil {
		t.Fatal(err)
	}
	if users := fm.Users(); len(users) != 25 || users[7] != "b-7" {
		t.Fatalf("users %v", users)
	}
	if tok, err := fm.Mint("b-3", "bf", time.Now(), time.Hour); err != nil || !strings.HasSuffix(lines[3], " "+tok) {
		t.Fatalf("token of b-3: %v", err)
	}
	if _, err := fm.Mint("nobody", "bf", time.Now(), time.Hour); err == nil {
		t.Fatal("a user the file does not have got a token")
	}
	for name, body := range map[string]string{"no token": "u1\n", "twice": "u1 a\nu1 b\n", "empty": "# nothing\n"} {
		bad := filepath.Join(t.TempDir(), "bad.txt")
		if err := os.WriteFile(bad, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		fp.Token.File = bad
		if _, err := fp.Minter(""); err == nil {
			t.Errorf("%s: a malformed token file was accepted", name)
		}
	}
}
