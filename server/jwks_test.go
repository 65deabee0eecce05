package server_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/google/uuid"

	"github.com/fsctl/fsctl/internal/checkout/auth"
	"github.com/fsctl/fsctl/internal/harness/testenv/eventually"
	checkouttest "github.com/fsctl/fsctl/server/servertest"
)

const (
	idpIssuer   = "https://idp.fsctl.test"
	idpAudience = "checkout"
)

// idp is a real issuer (auth.IssuerHandler) on a loopback TLS server that can be taken down.
type idp struct {
	key  *auth.SigningKey
	srv  *httptest.Server
	ca   string
	down atomic.Bool
}

func startIdP(t *testing.T) *idp {
	t.Helper()
	ec, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	p := &idp{}
	if p.key, err = auth.NewSigningKey(ec); err != nil {
		t.Fatal(err)
	}
	h := auth.IssuerHandler(idpIssuer, func() ([]*auth.SigningKey, error) { return []*auth.SigningKey{p.key}, nil })
	p.srv = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if p.down.Load() {
			http.Error(w, "down", http.StatusServiceUnavailable)
			return
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(p.srv.Close)
	p.ca = filepath.Join(t.TempDir(), "idp-ca.pem")
	if err := os.WriteFile(p.ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: p.srv.Certificate().Raw}), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func (p *idp) config() *auth.JWKSConfig {
	return &auth.JWKSConfig{URL: p.srv.URL + auth.JWKSPath, Issuer: idpIssuer, Audience: idpAudience, CAFile: p.ca,
		UnknownKIDRefresh: 10 * time.Millisecond}
}

func (p *idp) token(t *testing.T, user string) string {
	t.Helper()
	tok, err := p.key.Mint(user, idpIssuer, idpAudience, time.Now(), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// buyWith sends one purchase of the hot item with a bearer token and returns the status.
func buyWith(t *testing.T, c *checkouttest.Checkout, token string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, c.Base+"/api/v1/sales/"+c.Sale.ID+"/items/hot/purchase", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Idempotency-Key", uuid.NewString())
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// readyz returns /readyz's status and its jwks check.
func readyz(t *testing.T, c *checkouttest.Checkout) (int, string) {
	t.Helper()
	resp, err := http.Get(c.Base + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body struct {
		Checks map[string]string `json:"checks"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, body.Checks["jwks"]
}

// TestCheckoutWithJWKS: the checkout verifying against an identity provider's JWKS sells to its
// ES256 buyers and answers 401, as for any bad token, to an HS256 token (its own secret's, even)
// and to "none"; /readyz reports the key set.
func TestCheckoutWithJWKS(t *testing.T) {
	p := startIdP(t)
	c := checkouttest.Start(t, checkouttest.Options{Quantity: 5, Limit: 1, JWKS: p.config()})
	if code, body := buyWith(t, c, p.token(t, "idp-buyer-1")); code != http.StatusAccepted {
		t.Fatalf("an ES256 token of the issuer: %d %s", code, body)
	}
	none, _ := jwt.NewWithClaims(jwt.SigningMethodNone, jwt.RegisteredClaims{Subject: "idp-buyer-2", Issuer: idpIssuer,
		Audience: jwt.ClaimStrings{idpAudience}, ExpiresAt: jwt.NewNumericDate(time.Now().Add(time.Hour))}).SignedString(jwt.UnsafeAllowNoneSignatureType)
	for name, tok := range map[string]string{"HS256 with the server's secret": c.Token("idp-buyer-2"), "alg none": none} {
		if code, body := buyWith(t, c, tok); code != http.StatusUnauthorized || !strings.Contains(body, "UNAUTHORIZED") {
			t.Errorf("%s: %d %s, want 401 UNAUTHORIZED", name, code, body)
		}
	}
	if code, check := readyz(t, c); code != http.StatusOK || check != "ok" {
		t.Fatalf("/readyz %d, jwks %q", code, check)
	}
}

// TestCheckoutStartsWithoutItsIssuer: an issuer that does not answer at start does not stop the
// checkout: it serves, refuses every token, and is not ready, naming the JWKS, until the issuer
// answers; then it sells.
func TestCheckoutStartsWithoutItsIssuer(t *testing.T) {
	p := startIdP(t)
	p.down.Store(true)
	c := checkouttest.Start(t, checkouttest.Options{Quantity: 5, Limit: 1, JWKS: p.config()})
	tok := p.token(t, "idp-buyer-1")
	if code, body := buyWith(t, c, tok); code != http.StatusUnauthorized {
		t.Fatalf("without the issuer's keys: %d %s, want 401", code, body)
	}
	if code, check := readyz(t, c); code != http.StatusServiceUnavailable || !strings.Contains(check, p.srv.URL) {
		t.Fatalf("/readyz with the issuer down: %d, jwks %q", code, check)
	}
	p.down.Store(false)
	eventually.OK(t, 10*time.Second, func() error {
		if code, check := readyz(t, c); code != http.StatusOK {
			return fmt.Errorf("/readyz after the issuer came back: %d, jwks %q", code, check)
		}
		return nil
	})
	if code, body := buyWith(t, c, tok); code != http.StatusAccepted {
		t.Fatalf("once the issuer answers: %d %s", code, body)
	}
}
