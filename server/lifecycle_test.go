package server_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/fsctl/fsctl/internal/checkout/payment"
	"github.com/fsctl/fsctl/internal/checkout/payment/fake"
	"github.com/fsctl/fsctl/internal/checkout/stock"
	"github.com/fsctl/fsctl/internal/harness/testenv/eventually"
)

// Every way a reservation can end, each on the real services, each ending with Redis and
// PostgreSQL agreeing on every invariant.

func TestPaidOrder(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 5, 1)
	id := e.mustBuy("payer", "k1")
	if code, body := e.pay("payer", id, "tok_ok"); code != http.StatusOK || !strings.Contains(body, `"PAID"`) {
		t.Fatalf("pay: %d %s, want 200 PAID", code, body)
	}
	e.waitStatus(id, "PAID")
	rep := e.settled()
	if rep.Stock != 4 || rep.Holds != 0 || rep.Counts.Paid != 1 {
		t.Fatalf("after payment: stock %d holds %d paid %d, want 4 0 1", rep.Stock, rep.Holds, rep.Counts.Paid)
	}
	if code, body := e.pay("payer", id, "tok_ok"); code != http.StatusOK {
		t.Fatalf("paying twice: %d %s, want 200 (the same answer)", code, body)
	}
	if code, body := e.cancel("payer", id); code != http.StatusConflict || !strings.Contains(body, "ORDER_CLOSED") {
		t.Fatalf("cancel a paid order: %d %s, want 409 ORDER_CLOSED", code, body)
	}
	if code, _ := e.pay("thief", id, "tok_ok"); code != http.StatusNotFound {
		t.Fatalf("another user paying: %d, want 404", code)
	}
	if code, body := e.buy("payer", "k2"); code != http.StatusConflict {
		t.Fatalf("a paid unit still counts toward the limit: %d %s, want 409", code, body)
	}
}

func TestDeclinedPaymentReleases(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 1, 1)
	id := e.mustBuy("decliner", "k1")
	if code, body := e.pay("decliner", id, "tok_decline"); code != http.StatusPaymentRequired || !strings.Contains(body, "PAYMENT_DECLINED") {
		t.Fatalf("pay: %d %s, want 402 PAYMENT_DECLINED", code, body)
	}
	if got := e.status(id); got != "FAILED" {
		t.Fatalf("declined order is %q, want FAILED", got)
	}
	rep := e.settled()
	if rep.Stock != 1 || rep.Holds != 0 {
		t.Fatalf("declined unit not back: stock %d holds %d", rep.Stock, rep.Holds)
	}
	// The unit is on sale again, and the buyer's limit slot is free.
	e.mustBuy("decliner", "k2")
	e.settled()
}

func TestBreakerOpensAndReleases(t *testing.T) {
	t.Parallel()
	provider := fake.New(fake.Config{}, nil)
	ps := httptest.NewServer(provider.Handler())
	defer ps.Close()
	e := newEnvWith(t, envOptions{Quantity: 3, Limit: 1, PaymentURL: ps.URL,
		Breaker: payment.BreakerConfig{ConsecutiveFailures: 2, OpenTimeout: time.Hour}})
	for _, u := range []string{"a", "b"} {
		id := e.mustBuy(u, "k")
		if code, body := e.pay(u, id, "tok_error"); code != http.StatusServiceUnavailable || !strings.Contains(body, "PAYMENT_UNAVAILABLE") {
			t.Fatalf("pay against a failing provider: %d %s, want 503 PAYMENT_UNAVAILABLE", code, body)
		}
	}
	before := provider.Stats().Charges
	id := e.mustBuy("c", "k")
	if code, body := e.pay("c", id, "tok_ok"); code != http.StatusServiceUnavailable || !strings.Contains(body, "PAYMENT_UNAVAILABLE") {
		t.Fatalf("pay with the breaker open: %d %s, want 503 PAYMENT_UNAVAILABLE", code, body)
	}
	if after := provider.Stats().Charges; after != before {
		t.Fatalf("the open breaker let %d calls through to the provider", after-before)
	}
	if _, body := e.do(http.MethodGet, "/metrics", "", nil, nil); !strings.Contains(body, "fsctl_payment_breaker_state 2") {
		t.Fatal("metrics do not show the breaker open")
	}
	rep := e.settled()
	if rep.Stock != 3 || rep.Counts.Failed != 3 {
		t.Fatalf("after three failed payments: stock %d failed %d, want 3 3", rep.Stock, rep.Counts.Failed)
	}
}

func TestExpiryReleasesOnceAcrossInstances(t *testing.T) {
	t.Parallel()
	e := newEnvWith(t, envOptions{Quantity: 4, Limit: 1, HoldTTL: time.Second, Workers: true})
	e.start(false) // a second instance running the same jobs
	var ids []string
	for _, u := range []string{"x1", "x2", "x3"} {
		ids = append(ids, e.mustBuy(u, "k").String())
	}
	e.counts(3)
	eventually.OK(t, 20*time.Second, func() error {
		if c := e.counts(0); c.Expired != 3 {
			return fmt.Errorf("holds never expired: %+v", c)
		}
		return nil
	})
	rep := e.settled()
	if rep.Stock != 4 || rep.Holds != 0 || rep.Counts.Sold != 0 {
		t.Fatalf("after expiry: stock %d holds %d sold %d, want 4 0 0", rep.Stock, rep.Holds, rep.Counts.Sold)
	}
	code, body := e.pay("x1", orderIDOf(t, `"orderId":"`+ids[0]+`"`), "tok_ok")
	if code != http.StatusGone || !strings.Contains(body, "EXPIRED") {
		t.Fatalf("paying an expired order: %d %s, want 410 EXPIRED", code, body)
	}
}

func TestCancelReleasesOnce(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 2, 1)
	id := e.mustBuy("canceller", "k1")
	if code, _ := e.cancel("someone-else", id); code != http.StatusNotFound {
		t.Fatalf("cancel by another user: %d, want 404", code)
	}
	for range 2 {
		if code, body := e.cancel("canceller", id); code != http.StatusOK || !strings.Contains(body, "CANCELLED") {
			t.Fatalf("cancel: %d %s, want 200 CANCELLED", code, body)
		}
	}
	rep := e.settled()
	if rep.Stock != 2 || rep.Counts.Cancelled != 1 {
		t.Fatalf("after cancel: stock %d cancelled %d, want 2 1 (released once)", rep.Stock, rep.Counts.Cancelled)
	}
	if code, body := e.pay("canceller", id, "tok_ok"); code != http.StatusConflict || !strings.Contains(body, "ORDER_CLOSED") {
		t.Fatalf("paying a cancelled order: %d %s, want 409 ORDER_CLOSED", code, body)
	}
}

// TestOrphanedHoldIsRepublished kills the publish path: the reserve ran, the server died before
// Kafka heard of the order. The sweeper finds the hold, re-publishes it, and the buyer's
// idempotent retry is told about an order that now exists.
func TestOrphanedHoldIsRepublished(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 3, 1)
	ctx := context.Background()
	orderID := mustV7(t)
	rv, err := e.app.Stock.Reserve(ctx, stock.Request{SaleID: e.sale.ID, ItemID: "hot", UserID: "crashed", IdemKey: "k1", OrderID: orderID})
	if err != nil || rv.OrderID != orderID {
		t.Fatalf("reserve: %+v %v", rv, err)
	}
	time.Sleep(5 * time.Millisecond) // older than the test's orphan age
	rep, err := e.app.Lifecycle.SweepOnce(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Republished != 1 {
		t.Fatalf("sweep re-published %d holds, want 1", rep.Republished)
	}
	e.waitStatus(orderID, "PENDING")
	code, body := e.buy("crashed", "k1")
	if code != http.StatusAccepted || orderIDOf(t, body) != orderID {
		t.Fatalf("retry after the crash: %d %s, want 202 with order %s", code, body, orderID)
	}
	e.settled()
	// A second sweep finds nothing to do: the order is recorded.
	if rep, err := e.app.Lifecycle.SweepOnce(ctx); err != nil || rep.Republished != 0 {
		t.Fatalf("second sweep: %+v %v", rep, err)
	}
	if code, _ := e.cancel("crashed", orderID); code != http.StatusOK {
		t.Fatalf("cancel the recovered order: %d", code)
	}
	if rep := e.settled(); rep.Stock != 3 {
		t.Fatalf("stock %d after cancel, want 3", rep.Stock)
	}
}

// TestStuckClaimsAreSettled covers a server that died mid-payment: its claims block expiry until
// the claim resolver voids them with the provider — which confirms a charge that did land (the
// order is paid) and guarantees one that did not never will (the order fails and is released).
func TestStuckClaimsAreSettled(t *testing.T) {
	t.Parallel()
	provider := fake.New(fake.Config{}, nil)
	ps := httptest.NewServer(provider.Handler())
	defer ps.Close()
	e := newEnvWith(t, envOptions{Quantity: 3, Limit: 1, PaymentURL: ps.URL, ClaimTimeout: 100 * time.Millisecond})
	charged, abandoned := e.mustBuy("charged", "k"), e.mustBuy("abandoned", "k")
	e.counts(2)
	ctx := context.Background()
	for id, user := range map[uuid.UUID]string{charged: "charged", abandoned: "abandoned"} {
		if _, claim, err := e.app.Orders.ClaimPayment(ctx, id, user); err != nil || claim.String() != "ok" {
			t.Fatalf("claim %s: %v %v", id, claim, err)
		}
	}
	// The dead server's charge of the first order reached the provider.
	if rc, err := payment.NewHTTPClient(ps.URL, time.Second).Charge(ctx, payment.Charge{OrderID: charged, AmountCents: 4999, Currency: "USD", Token: "tok_ok"}); err != nil || rc.Status != payment.Succeeded {
		t.Fatalf("charge: %+v %v", rc, err)
	}
	if n, _ := e.app.Lifecycle.ExpireOnce(ctx); n != 0 {
		t.Fatalf("expiry took %d claimed orders", n)
	}
	time.Sleep(300 * time.Millisecond) // past the claim timeout (measured by PostgreSQL's clock)
	if n, err := e.app.Lifecycle.ResolveClaimsOnce(ctx); err != nil || n != 2 {
		t.Fatalf("resolved %d claims (%v), want 2", n, err)
	}
	if got := [2]string{e.status(charged), e.status(abandoned)}; got != [2]string{"PAID", "FAILED"} {
		t.Fatalf("statuses %v, want [PAID FAILED]", got)
	}
	if rep := e.settled(); rep.Stock != 2 || rep.Counts.Paid != 1 {
		t.Fatalf("after resolving: stock %d paid %d, want 2 1", rep.Stock, rep.Counts.Paid)
	}
}

// TestUnknownPaymentOutcome: the provider answers too late, so nobody knows whether it charged.
// The order is not released on a guess: it stays claimed until the provider can be asked, then
// the claim resolver settles it.
func TestUnknownPaymentOutcome(t *testing.T) {
	t.Parallel()
	provider := fake.New(fake.Config{Latency: 2 * time.Second}, nil)
	ps := httptest.NewServer(provider.Handler())
	defer ps.Close()
	e := newEnvWith(t, envOptions{Quantity: 1, Limit: 1, PaymentURL: ps.URL,
		PaymentTimeout: 100 * time.Millisecond, ClaimTimeout: 100 * time.Millisecond})
	id := e.mustBuy("slow", "k")
	e.counts(1)
	if code, body := e.pay("slow", id, "tok_ok"); code != http.StatusServiceUnavailable || !strings.Contains(body, "PAYMENT_UNAVAILABLE") {
		t.Fatalf("pay against a slow provider: %d %s, want 503 PAYMENT_UNAVAILABLE", code, body)
	}
	if code, body := e.pay("slow", id, "tok_ok"); code != http.StatusConflict || !strings.Contains(body, "PAYMENT_IN_PROGRESS") {
		t.Fatalf("paying again while the outcome is unknown: %d %s, want 409 PAYMENT_IN_PROGRESS", code, body)
	}
	if err := provider.Configure(fake.Config{}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond)
	if n, err := e.app.Lifecycle.ResolveClaimsOnce(context.Background()); err != nil || n != 1 {
		t.Fatalf("resolved %d claims (%v), want 1", n, err)
	}
	if st := e.status(id); st != "FAILED" {
		t.Fatalf("order is %s, want FAILED (the provider never charged it)", st)
	}
	if rep := e.settled(); rep.Stock != 1 {
		t.Fatalf("stock %d, want 1", rep.Stock)
	}
}
