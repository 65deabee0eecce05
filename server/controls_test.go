package server_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/fsctl/fsctl/internal/harness/testenv/eventually"
	"github.com/fsctl/fsctl/server"
)

const opToken = "operator-token-0123456789"

func (e *env) admin(base, method, path, body string) (int, string) {
	e.t.Helper()
	return e.doAt(base, method, path, "", map[string]string{"Authorization": "Bearer " + opToken}, strings.NewReader(body))
}

// eventually retries buy on base until it answers want (kill switches travel by polling).
func (e *env) eventually(base, user, key string, want int) string {
	e.t.Helper()
	var body string
	eventually.OK(e.t, 5*time.Second, func() error {
		var code int
		code, body = e.doAt(base, http.MethodPost, e.purchasePath(), user, map[string]string{"Idempotency-Key": key}, nil)
		if code != want {
			return fmt.Errorf("purchase on %s kept answering %d %s, want %d", base, code, body, want)
		}
		return nil
	})
	return body
}

// untilAnswer repeats a request that changes nothing, as buyer p2, until base answers want with
// code in its body (kill switches reach an instance by polling).
func (e *env) untilAnswer(base, method, path string, headers map[string]string, body string, want int, code string) {
	e.t.Helper()
	eventually.OK(e.t, 5*time.Second, func() error {
		got, answer := e.doAt(base, method, path, "p2", headers, strings.NewReader(body))
		if got != want || !strings.Contains(answer, code) {
			return fmt.Errorf("%s %s on %s kept answering %d %s, want %d %s", method, path, base, got, answer, want, code)
		}
		return nil
	})
}

// TestOperatorControls pauses and resumes a sale and throws kill switches through /admin/v1, and
// checks that every instance honours them.
func TestOperatorControls(t *testing.T) {
	t.Parallel()
	e := newEnvWith(t, envOptions{Quantity: 5, Limit: 1, AdminToken: opToken})
	_, base2 := e.start(true)
	salePath := "/admin/v1/sales/" + e.sale.ID

	if code, _ := e.do(http.MethodPost, salePath+"/pause", "", nil, nil); code != http.StatusUnauthorized {
		t.Fatalf("pause without the operator token: %d, want 401", code)
	}
	if code, body := e.admin(e.base, http.MethodPost, salePath+"/pause", ""); code != http.StatusOK {
		t.Fatalf("pause: %d %s", code, body)
	}
	for _, base := range []string{e.base, base2} {
		if body := e.eventually(base, "p1", "k-paused", http.StatusServiceUnavailable); !strings.Contains(body, "PAUSED") {
			t.Fatalf("paused sale answered %s", body)
		}
	}
	if code, body := e.admin(base2, http.MethodPost, salePath+"/resume", ""); code != http.StatusOK {
		t.Fatalf("resume: %d %s", code, body)
	}
	e.eventually(e.base, "p1", "k-resumed", http.StatusAccepted)

	if code, body := e.admin(e.base, http.MethodPut, "/admin/v1/switches/purchase", `{"off":true}`); code != http.StatusOK {
		t.Fatalf("throw purchase switch: %d %s", code, body)
	}
	// A purchase of an item that does not exist changes nothing: it answers 404 until an instance
	// has polled the switch, DISABLED after (the switch is checked first).
	for _, base := range []string{e.base, base2} {
		e.untilAnswer(base, http.MethodPost, "/api/v1/sales/"+e.sale.ID+"/items/no-such-item/purchase",
			map[string]string{"Idempotency-Key": "k-probe"}, "", http.StatusServiceUnavailable, "DISABLED")
	}
	for _, base := range []string{e.base, base2} {
		code, body := e.doAt(base, http.MethodPost, e.purchasePath(), "p2", map[string]string{"Idempotency-Key": "k-off"}, nil)
		if code != http.StatusServiceUnavailable || !strings.Contains(body, "DISABLED") {
			t.Fatalf("switched-off purchase on %s answered %d %s, want 503 DISABLED", base, code, body)
		}
	}
	if code, _ := e.admin(e.base, http.MethodPut, "/admin/v1/switches/purchase", `{"off":false}`); code != http.StatusOK {
		t.Fatal("reset purchase switch")
	}
	id := orderIDOf(t, e.eventually(base2, "p2", "k-on", http.StatusAccepted))

	if code, _ := e.admin(e.base, http.MethodPut, "/admin/v1/switches/payment", `{"off":true}`); code != http.StatusOK {
		t.Fatal("throw payment switch")
	}
	// Paying an order that does not exist changes nothing either: 404 until the switch is seen.
	e.untilAnswer(e.base, http.MethodPost, "/api/v1/orders/"+uuid.Must(uuid.NewV7()).String()+"/pay", nil,
		`{"paymentToken":"tok_ok"}`, http.StatusServiceUnavailable, "DISABLED")
	if code, body := e.pay("p2", id, "tok_ok"); code != http.StatusServiceUnavailable || !strings.Contains(body, "DISABLED") {
		t.Fatalf("pay with payments off: %d %s, want 503 DISABLED", code, body)
	}
	e.counts(2)
	if st := e.status(id); st != "PENDING" {
		t.Fatalf("order is %s with payments off, want PENDING (the hold is kept)", st)
	}
	for name, tc := range map[string]struct {
		method, path, body string
		want               int
	}{
		"unknown switch": {http.MethodPut, "/admin/v1/switches/nope", `{"off":true}`, http.StatusNotFound},
		"bad body":       {http.MethodPut, "/admin/v1/switches/expiry", `{"of":true}`, http.StatusBadRequest},
		"unknown sale":   {http.MethodPost, "/admin/v1/sales/nope/pause", "", http.StatusNotFound},
		"bad sale id":    {http.MethodGet, "/admin/v1/sales/no%20pe", "", http.StatusBadRequest},
		"sale state":     {http.MethodGet, salePath, "", http.StatusOK},
		"switches":       {http.MethodGet, "/admin/v1/switches", "", http.StatusOK},
	} {
		if code, body := e.admin(e.base, tc.method, tc.path, tc.body); code != tc.want {
			t.Errorf("%s: %d %s, want %d", name, code, body, tc.want)
		}
	}
	if _, body := e.admin(e.base, http.MethodGet, "/admin/v1/switches", ""); !strings.Contains(body, `"payment":true`) {
		t.Fatalf("switches: %s", body)
	}
}

func TestAdminAPIOffWithoutToken(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 1, 1)
	if code, body := e.do(http.MethodGet, "/admin/v1/switches", "", nil, nil); code != http.StatusForbidden || !strings.Contains(body, "--admin-token") {
		t.Fatalf("admin API without a configured token: %d %s, want 403 naming --admin-token", code, body)
	}
}

func TestSaleSchedule(t *testing.T) {
	t.Parallel()
	early := newEnvWith(t, envOptions{Quantity: 1, Limit: 1, OpensAt: time.Now().Add(time.Hour)})
	if code, body := early.buy("b", "k"); code != http.StatusTooEarly || !strings.Contains(body, "NOT_STARTED") {
		t.Fatalf("before the opening: %d %s, want 425 NOT_STARTED", code, body)
	}
	late := newEnvWith(t, envOptions{Quantity: 1, Limit: 1, OpensAt: time.Now().Add(-time.Hour), ClosesAt: time.Now().Add(-time.Minute)})
	if code, body := late.buy("b", "k"); code != http.StatusGone || !strings.Contains(body, "SALE_ENDED") {
		t.Fatalf("after the close: %d %s, want 410 SALE_ENDED", code, body)
	}
}

func TestSalePageIsCacheable(t *testing.T) {
	t.Parallel()
	e := newEnvWith(t, envOptions{Quantity: 3, Limit: 1, ReadModelTTL: time.Minute})
	req, _ := http.NewRequest(http.MethodGet, e.base+"/api/v1/sales/"+e.sale.ID, nil)
	resp, err := e.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	cc, etag := resp.Header.Get("Cache-Control"), resp.Header.Get("ETag")
	if !strings.Contains(cc, "s-maxage=60") || etag == "" {
		t.Fatalf("Cache-Control %q ETag %q, want a CDN-cacheable answer with an ETag", cc, etag)
	}
	req.Header.Set("If-None-Match", etag)
	resp, err = e.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotModified {
		t.Fatalf("revalidation: %d, want 304", resp.StatusCode)
	}
}

func TestLocalSoldOutFlag(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 1, 1)
	id := e.mustBuy("first", "k1")
	if code, _ := e.buy("second", "k1"); code != http.StatusGone {
		t.Fatalf("second buyer: %d, want 410", code)
	}
	// The flag now answers, and every answer is the script's own (verify mode): the winner's
	// retry gets its reservation, the winner with a new key hears ALREADY_PURCHASED (not a
	// "sold out" that would make a winner think the unit was lost).
	for _, u := range []string{"third", "third"} {
		if code, _ := e.buy(u, "k-new"); code != http.StatusGone {
			t.Fatalf("flagged sold-out for %s: %d, want 410", u, code)
		}
	}
	if code, body := e.buy("first", "k-new"); code != http.StatusConflict || !strings.Contains(body, "ALREADY_PURCHASED") {
		t.Fatalf("the winner with a new key under the flag: %d %s, want 409 ALREADY_PURCHASED", code, body)
	}
	if code, body := e.buy("first", "k1"); code != http.StatusAccepted || orderIDOf(t, body) != id {
		t.Fatalf("winner's retry under the flag: %d %s, want 202 with order %s", code, body, id)
	}
	if _, body := e.do(http.MethodGet, "/metrics", "", nil, nil); !strings.Contains(body, "fsctl_sold_out_flag_answers_total 4") {
		t.Fatal("the flag did not answer the last four purchases")
	}
	// A release puts the unit back; the instance learns it within its poll interval.
	if code, _ := e.cancel("first", id); code != http.StatusOK {
		t.Fatal("cancel")
	}
	e.eventually(e.base, "fourth", "k1", http.StatusAccepted)
	e.settled()
}

func TestWaitForReplicas(t *testing.T) {
	t.Parallel()
	e := newEnvWith(t, envOptions{Quantity: 2, Limit: 1, WaitReplicas: 1})
	e.mustBuy("w", "k")
	if _, body := e.do(http.MethodGet, "/metrics", "", nil, nil); !strings.Contains(body, `fsctl_redis_wait_short_total{policy="count"} 1`) {
		t.Fatal("a reserve no replica acknowledged was not counted")
	}
	e.settled()
}

// TestSoldOutFlagTrustMode: in trust mode the flag answers from memory, without Redis — even the
// winner's retry hears SOLD_OUT (the documented price); the order itself stands.
func TestSoldOutFlagTrustMode(t *testing.T) {
	t.Parallel()
	e := newEnvWith(t, envOptions{Quantity: 1, Limit: 1, SoldOut: server.SoldOutTrust})
	id := e.mustBuy("first", "k1")
	if code, _ := e.buy("second", "k1"); code != http.StatusGone {
		t.Fatalf("second buyer: %d, want 410", code)
	}
	if code, _ := e.buy("first", "k1"); code != http.StatusGone {
		t.Fatalf("winner's retry in trust mode: %d, want 410 from the flag", code)
	}
	e.counts(1)
	if st := e.status(id); st != "PENDING" {
		t.Fatalf("the winner's order is %q, want PENDING", st)
	}
}
