package loadgen

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/fsctl/fsctl/auth"
	"github.com/fsctl/fsctl/outcome"
)

func TestClassify(t *testing.T) {
	tests := []struct {
		status int
		body   string
		want   outcome.Code
		order  string
	}{
		{202, `{"orderId":"o-1","status":"PENDING"}`, outcome.Reserved, "o-1"},
		{410, `{"error":"SOLD_OUT","message":"gone"}`, outcome.SoldOut, ""},
		{409, `{"error":"ALREADY_PURCHASED"}`, outcome.AlreadyPurchased, ""},
		{503, `{"error":"PAUSED"}`, outcome.Paused, ""},
		{502, `<html>bad gateway</html>`, ServerError, ""},
		{202, `not json`, "HTTP_202", ""},
		{418, ``, "HTTP_418", ""},
	}
	for _, tc := range tests {
		got, order := Classify(tc.status, []byte(tc.body))
		if got != tc.want || order != tc.order {
			t.Errorf("Classify(%d, %s) = %s %q, want %s %q", tc.status, tc.body, got, order, tc.want, tc.order)
		}
	}
}

// TestBurstSendsEveryBuyerOnce checks every buyer is a distinct user with its own key and token,
// each sends exactly one request, and the answers are counted by outcome.
func TestBurstSendsEveryBuyerOnce(t *testing.T) {
	secret := []byte("loadgen-test-secret-0123456789ab")
	v, _ := auth.NewVerifier(secret, nil)
	var sold atomic.Int64
	seen := make(chan string, 100)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		user, err := v.UserFromHeader(r.Header.Get("Authorization"))
		if err != nil || r.Header.Get("Idempotency-Key") != user+"-k1" || !strings.HasSuffix(r.URL.Path, "/sales/s/items/i/purchase") {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		seen <- user
		if sold.Add(1) <= 10 {
			w.WriteHeader(http.StatusAccepted)
			_, _ = w.Write([]byte(`{"orderId":"` + user + `"}`))
			return
		}
		w.WriteHeader(http.StatusGone)
		_, _ = w.Write([]byte(`{"error":"SOLD_OUT"}`))
	}))
	defer ts.Close()
	res, err := Burst(context.Background(), BurstConfig{BaseURL: ts.URL, SaleID: "s", ItemID: "i", Buyers: 100, UserPrefix: "b", Secret: secret, Conns: 8})
	if err != nil {
		t.Fatal(err)
	}
	close(seen)
	users := map[string]bool{}
	for u := range seen {
		if users[u] {
			t.Fatalf("buyer %s sent twice", u)
		}
		users[u] = true
	}
	if len(users) != 100 || res.Counts[outcome.Reserved] != 10 || res.Counts[outcome.SoldOut] != 90 || len(res.Reserved()) != 10 {
		t.Fatalf("%d buyers seen, counts %v", len(users), res.Counts)
	}
}
