package server_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/fsctl/fsctl/internal/checkout/auth"
)

// TestBadInputChangesNothing sends every kind of malformed or unauthorized request and checks each
// gets the right 4xx with a machine code, and that Redis and PostgreSQL are untouched afterwards.
func TestBadInputChangesNothing(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 10, 1)
	now := time.Now()
	expired, _ := auth.Mint(testSecret, "u1", now.Add(-2*time.Hour), time.Hour)
	forged, _ := auth.Mint([]byte("not-the-server-secret-at-all-xx"), "u1", now, time.Hour)
	hs512 := jwt.NewWithClaims(jwt.SigningMethodHS512, jwt.RegisteredClaims{Subject: "u1", ExpiresAt: jwt.NewNumericDate(now.Add(time.Hour))})
	wrongAlg, _ := hs512.SignedString(testSecret)
	good := e.token("u1")
	path := e.purchasePath()
	key := map[string]string{"Idempotency-Key": "k-1"}
	withAuth := func(tok string, h map[string]string) map[string]string {
		out := map[string]string{"Authorization": "Bearer " + tok}
		for k, v := range h {
			out[k] = v
		}
		return out
	}
	tests := []struct {
		name    string
		method  string
		path    string
		headers map[string]string
		body    string
		status  int
		code    string
	}{
		{"no token", "POST", path, key, "", 401, "UNAUTHORIZED"},
		{"not bearer", "POST", path, map[string]string{"Authorization": "Basic dTE6cA==", "Idempotency-Key": "k"}, "", 401, "UNAUTHORIZED"},
		{"forged token", "POST", path, withAuth(forged, key), "", 401, "UNAUTHORIZED"},
		{"expired token", "POST", path, withAuth(expired, key), "", 401, "UNAUTHORIZED"},
		{"HS512 token", "POST", path, withAuth(wrongAlg, key), "", 401, "UNAUTHORIZED"},
		{"garbage token", "POST", path, withAuth("x.y.z", key), "", 401, "UNAUTHORIZED"},
		{"missing idempotency key", "POST", path, withAuth(good, nil), "", 400, "INVALID_REQUEST"},
		{"oversized idempotency key", "POST", path, withAuth(good, map[string]string{"Idempotency-Key": strings.Repeat("k", 129)}), "", 400, "INVALID_REQUEST"},
		{"idempotency key with space", "POST", path, withAuth(good, map[string]string{"Idempotency-Key": "a b"}), "", 400, "INVALID_REQUEST"},
		{"unknown sale", "POST", "/api/v1/sales/no-such-sale/items/hot/purchase", withAuth(good, key), "", 404, "NOT_FOUND"},
		{"unknown item", "POST", "/api/v1/sales/" + e.sale.ID + "/items/nope/purchase", withAuth(good, key), "", 404, "NOT_FOUND"},
		{"malformed sale id", "POST", "/api/v1/sales/bad.id/items/hot/purchase", withAuth(good, key), "", 400, "INVALID_REQUEST"},
		{"overlong item id", "POST", "/api/v1/sales/" + e.sale.ID + "/items/" + strings.Repeat("i", 65) + "/purchase", withAuth(good, key), "", 400, "INVALID_REQUEST"},
		{"oversized body", "POST", path, withAuth(good, key), `{"quantity":1,"pad":"` + strings.Repeat("x", 4096) + `"}`, 413, "BODY_TOO_LARGE"},
		{"body not JSON", "POST", path, withAuth(good, key), `quantity=1`, 400, "INVALID_REQUEST"},
		{"unknown body field", "POST", path, withAuth(good, key), `{"userId":"someone-else"}`, 400, "INVALID_REQUEST"},
		{"two JSON values", "POST", path, withAuth(good, key), `{} {}`, 400, "INVALID_REQUEST"},
		{"quantity 2", "POST", path, withAuth(good, key), `{"quantity":2}`, 422, "UNPROCESSABLE"},
		{"wrong method", "GET", path, withAuth(good, key), "", 405, "METHOD_NOT_ALLOWED"},
		{"order id not a uuid", "GET", "/api/v1/orders/12345", withAuth(good, nil), "", 400, "INVALID_REQUEST"},
		{"unknown order", "GET", "/api/v1/orders/01a22a18-8026-7715-b8cf-f6073e60c0cc", withAuth(good, nil), "", 404, "NOT_FOUND"},
		{"order without token", "GET", "/api/v1/orders/01a22a18-8026-7715-b8cf-f6073e60c0cc", nil, "", 401, "UNAUTHORIZED"},
		{"unknown sale page", "GET", "/api/v1/sales/no-such-sale", nil, "", 404, "NOT_FOUND"},
		{"unknown endpoint", "GET", "/api/v2/anything", nil, "", 404, "NOT_FOUND"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var body *strings.Reader
			if tc.body != "" {
				body = strings.NewReader(tc.body)
			}
			var code int
			var got string
			if body != nil {
				code, got = e.do(tc.method, tc.path, "", tc.headers, body)
			} else {
				code, got = e.do(tc.method, tc.path, "", tc.headers, nil)
			}
			if code != tc.status {
				t.Fatalf("status %d (%s), want %d", code, got, tc.status)
			}
			if tc.code != "" && !strings.Contains(got, `"error":"`+tc.code+`"`) {
				t.Fatalf("body %s, want error code %s", got, tc.code)
			}
			if tc.code != "" && !strings.Contains(got, `"message":"`) {
				t.Fatalf("body %s has no message", got)
			}
		})
	}
	// Nothing changed: full stock, no holds, no buyer, no idempotency record, no order.
	if st, holds := e.redisState(); st != 10 || holds != 0 {
		t.Fatalf("redis stock %d holds %d after bad input, want 10 and 0", st, holds)
	}
	keys, err := e.app.Stock.Client().Keys(context.Background(), "{fs:"+e.sale.ID+":*").Result()
	if err != nil {
		t.Fatal(err)
	}
	if len(keys) != 2 { // meta and stock, written by the preload
		t.Fatalf("bad input left redis keys %v", keys)
	}
	if c := e.counts(0); c.Pending+c.Paid+c.Failed != 0 || c.Sold != 0 {
		t.Fatalf("bad input reached postgres: %+v", c)
	}
	// And the sale still works for a well-formed request.
	if code, body := e.buy("u1", "k-1"); code != http.StatusAccepted {
		t.Fatalf("valid purchase after bad input: %d %s", code, body)
	}
}
