package server_test

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/fsctl/fsctl/internal/contract/sale"
)

// signPath signs a purchase-path token the way server/reveal.go documents it, from the outside:
// base64url(expiry ms || HMAC-SHA256(HMAC-SHA256(jwt secret, label), sale \0 item \0 user \0 expiry)[:16]).
// The tests use it for tokens the server would never hand out (expired, for another item).
func signPath(saleID, itemID, user string, exp time.Time) string {
	k := hmac.New(sha256.New, testSecret)
	k.Write([]byte("fsctl purchase path v1"))
	var b [24]byte
	binary.BigEndian.PutUint64(b[:8], uint64(exp.UnixMilli()))
	m := hmac.New(sha256.New, k.Sum(nil))
	m.Write([]byte(saleID + "\x00" + itemID + "\x00" + user + "\x00"))
	m.Write(b[:8])
	copy(b[8:], m.Sum(nil)[:16])
	return base64.RawURLEncoding.EncodeToString(b[:])
}

type pathAnswer struct {
	PurchasePath string     `json:"purchasePath"`
	ExpiresAt    *time.Time `json:"expiresAt"`
}

// purchasePathOf asks for user's purchase path of the env's item and wants a 200.
func (e *env) purchasePathOf(user string) pathAnswer {
	e.t.Helper()
	code, body := e.do(http.MethodGet, e.purchasePath()+"-path", user, nil, nil)
	if code != http.StatusOK {
		e.t.Fatalf("GET purchase-path for %s: %d %s, want 200", user, code, body)
	}
	var a pathAnswer
	if err := json.Unmarshal([]byte(body), &a); err != nil || a.PurchasePath == "" {
		e.t.Fatalf("GET purchase-path for %s: %s: %v", user, body, err)
	}
	return a
}

func (e *env) buyAt(path, user, key string) (int, string) {
	e.t.Helper()
	return e.do(http.MethodPost, path, user, map[string]string{"Idempotency-Key": key}, nil)
}

// wantUntouched checks Redis still holds the item's whole quantity and no hold.
func (e *env) wantUntouched(what string) {
	e.t.Helper()
	if st, holds := e.redisState(); st != e.sale.Items[0].Quantity || holds != 0 {
		e.t.Fatalf("%s: redis stock %d holds %d, want %d and 0: something was reserved", what, st, holds, e.sale.Items[0].Quantity)
	}
}

func wantForbidden(t *testing.T, what string, code int, body string) {
	t.Helper()
	if code != http.StatusForbidden || !strings.Contains(body, `"error":"FORBIDDEN"`) {
		t.Fatalf("%s: %d %s, want 403 FORBIDDEN", what, code, body)
	}
}

// TestRevealBeforeOpening: before the opening nobody learns a purchase path, and nothing can be
// bought through the plain route or a made-up path.
func TestRevealBeforeOpening(t *testing.T) {
	t.Parallel()
	e := newEnvWith(t, envOptions{Quantity: 5, Limit: 1, OpensAt: time.Now().Add(time.Hour), Reveal: sale.Reveal{Enabled: true}})
	code, body := e.do(http.MethodGet, e.purchasePath()+"-path", "early-bird", nil, nil)
	if code != http.StatusTooEarly || !strings.Contains(body, `"error":"NOT_STARTED"`) || strings.Contains(body, "purchasePath") {
		t.Fatalf("purchase-path before the opening: %d %s, want 425 NOT_STARTED and no path", code, body)
	}
	if code, body := e.do(http.MethodGet, e.purchasePath()+"-path", "", nil, nil); code != http.StatusUnauthorized {
		t.Fatalf("purchase-path without a token: %d %s, want 401", code, body)
	}
	code, body = e.buy("early-bird", "k1")
	wantForbidden(t, "plain purchase of a reveal sale", code, body)
	if !strings.Contains(body, "purchase-path") {
		t.Fatalf("the refusal %s does not say where to get a path", body)
	}
	tok := signPath(e.sale.ID, "hot", "early-bird", time.Now().Add(time.Minute))
	forged := tok[:20] + strings.Repeat("A", 12)
	code, body = e.buyAt(e.purchasePath()+"/"+forged, "early-bird", "k2")
	wantForbidden(t, "forged path before the opening", code, body)
	e.wantUntouched("before the opening")
	if _, body := e.do(http.MethodGet, "/api/v1/sales/"+e.sale.ID, "", nil, nil); !strings.Contains(body, `"reveal":true`) {
		t.Fatalf("sale page %s does not say the sale reveals its purchase path", body)
	}
}

// TestRevealPurchase: once open, a buyer's path buys; every token that is not that buyer's for
// that item, or has expired, or is not a token at all, is refused with nothing reserved.
func TestRevealPurchase(t *testing.T) {
	t.Parallel()
	e := newEnvWith(t, envOptions{Quantity: 5, Limit: 1, Reveal: sale.Reveal{Enabled: true, TTL: 30 * time.Second}})
	before := time.Now()
	a := e.purchasePathOf("alice")
	prefix := e.purchasePath() + "/"
	if !strings.HasPrefix(a.PurchasePath, prefix) || len(a.PurchasePath) != len(prefix)+32 {
		t.Fatalf("path %q: want %s<32-character token>", a.PurchasePath, prefix)
	}
	if a.ExpiresAt == nil || a.ExpiresAt.Before(before.Add(29*time.Second)) || a.ExpiresAt.After(time.Now().Add(30*time.Second)) {
		t.Fatalf("expiresAt %v: want about 30s from now", a.ExpiresAt)
	}
	bob := e.purchasePathOf("bob")
	if bob.PurchasePath == a.PurchasePath {
		t.Fatal("two buyers got the same path")
	}

	code, body := e.buy("alice", "plain")
	wantForbidden(t, "plain purchase of a reveal sale", code, body)
	tok := strings.TrimPrefix(a.PurchasePath, prefix)
	stdAlphabet := strings.NewReplacer("-", "+", "_", "/").Replace(tok)
	flipped := []byte(tok)
	flipped[10] ^= 1
	refused := map[string]string{
		"bob's path":           bob.PurchasePath,
		"another item's token": prefix + signPath(e.sale.ID, "cold", "alice", time.Now().Add(time.Minute)),
		"another sale's token": prefix + signPath(e.sale.ID+"x", "hot", "alice", time.Now().Add(time.Minute)),
		"an expired token":     prefix + signPath(e.sale.ID, "hot", "alice", time.Now().Add(-time.Millisecond)),
		"a forged token":       prefix + signPath(e.sale.ID, "hot", "alice", time.Now().Add(time.Minute))[:12] + tok[12:],
		"a flipped bit":        prefix + string(flipped),
		"padding":              a.PurchasePath + "=",
		"garbage":              prefix + "not-a-token",
		"a huge token":         prefix + strings.Repeat("A", 8000),
		"a 32-char non-base64": prefix + strings.Repeat("*", 32),
	}
	if stdAlphabet != tok {
		refused["the standard alphabet"] = prefix + stdAlphabet
	}
	for what, path := range refused {
		code, body := e.buyAt(path, "alice", "k-"+strings.ReplaceAll(what, " ", "-"))
		if strings.Contains(strings.TrimPrefix(path, prefix), "/") && code == http.StatusNotFound {
			continue // a '/' makes it another route: the mux's 404
		}
		wantForbidden(t, what, code, body)
	}
	// No token at all is no route: the mux's 404, and still nothing reserved.
	if code, body := e.buyAt(prefix, "alice", "k-empty"); code != http.StatusNotFound && code != http.StatusForbidden {
		t.Fatalf("empty token: %d %s, want 404 or 403", code, body)
	}
	e.wantUntouched("after the refused paths")
	if _, body := e.do(http.MethodGet, "/metrics", "", nil, nil); !strings.Contains(body, "fsctl_purchase_paths_issued_total 2") ||
		!strings.Contains(body, `fsctl_purchase_paths_refused_total{reason="missing"} 1`) ||
		!strings.Contains(body, `fsctl_purchase_paths_refused_total{reason="expired"} 1`) ||
		!strings.Contains(body, `fsctl_purchase_paths_refused_total{reason="invalid"}`) ||
		!strings.Contains(body, `fsctl_purchase_paths_refused_total{reason="malformed"}`) {
		t.Fatalf("/metrics:\n%s", grepLines(body, "purchase_paths"))
	}

	code, body = e.buyAt(a.PurchasePath, "alice", "buy-1")
	if code != http.StatusAccepted {
		t.Fatalf("alice through her path: %d %s, want 202", code, body)
	}
	order := orderIDOf(t, body)
	// The same key again through the same path: the same order (an idempotent retry).
	if code, body := e.buyAt(a.PurchasePath, "alice", "buy-1"); code != http.StatusAccepted || orderIDOf(t, body) != order {
		t.Fatalf("replay through the path: %d %s, want 202 with order %s", code, body, order)
	}
	if code, body := e.buyAt(bob.PurchasePath, "bob", "buy-2"); code != http.StatusAccepted {
		t.Fatalf("bob through his path: %d %s, want 202", code, body)
	}
	if st, holds := e.redisState(); st != 3 || holds != 2 {
		t.Fatalf("redis stock %d holds %d, want 3 and 2", st, holds)
	}
	if c := e.counts(2); c.Pending != 2 {
		t.Fatalf("postgres: %d pending, want 2", c.Pending)
	}
}

// TestRevealOffUnchanged: a sale without reveal buys through the plain route as ever, the
// purchase-path endpoint names that route, and the token route works too (a bad token is still
// refused).
func TestRevealOffUnchanged(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 5, 1)
	a := e.purchasePathOf("carol")
	if a.PurchasePath != e.purchasePath() || a.ExpiresAt != nil {
		t.Fatalf("purchase-path of a sale without reveal: %+v, want the plain route %s and no expiry", a, e.purchasePath())
	}
	if _, body := e.do(http.MethodGet, "/api/v1/sales/"+e.sale.ID, "", nil, nil); !strings.Contains(body, `"reveal":false`) {
		t.Fatalf("sale page %s: want reveal false", body)
	}
	if code, body := e.buy("carol", "k1"); code != http.StatusAccepted {
		t.Fatalf("plain purchase: %d %s, want 202", code, body)
	}
	path := e.purchasePath() + "/" + signPath(e.sale.ID, "hot", "dave", time.Now().Add(time.Minute))
	if code, body := e.buyAt(path, "dave", "k2"); code != http.StatusAccepted {
		t.Fatalf("token route of a sale without reveal: %d %s, want 202", code, body)
	}
	code, body := e.buyAt(path, "erin", "k3")
	wantForbidden(t, "dave's path used by erin", code, body)
	if st, holds := e.redisState(); st != 3 || holds != 2 {
		t.Fatalf("redis stock %d holds %d, want 3 and 2", st, holds)
	}
}
