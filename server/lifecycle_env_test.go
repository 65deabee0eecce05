package server_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/fsctl/fsctl/internal/harness/testenv/eventually"
	"github.com/fsctl/fsctl/reconcile"
)

// pay pays for an order with a payment token of the fake provider (tok_ok, tok_decline, tok_error).
func (e *env) pay(user string, id uuid.UUID, token string) (int, string) {
	e.t.Helper()
	return e.do(http.MethodPost, "/api/v1/orders/"+id.String()+"/pay", user, nil,
		strings.NewReader(fmt.Sprintf(`{"paymentToken":%q}`, token)))
}

func (e *env) cancel(user string, id uuid.UUID) (int, string) {
	e.t.Helper()
	return e.do(http.MethodDelete, "/api/v1/orders/"+id.String(), user, nil, nil)
}

// mustBuy buys one unit and returns the order id.
func (e *env) mustBuy(user, key string) uuid.UUID {
	e.t.Helper()
	code, body := e.buy(user, key)
	if code != http.StatusAccepted {
		e.t.Fatalf("buy %s/%s: %d %s, want 202", user, key, code, body)
	}
	return orderIDOf(e.t, body)
}

// status reads an order's status from PostgreSQL ("" when it is not there).
func (e *env) status(id uuid.UUID) string {
	e.t.Helper()
	o, err := e.app.Orders.GetOrder(context.Background(), id)
	if err != nil {
		return ""
	}
	return o.Status
}

// waitStatus waits until PostgreSQL shows the order in status.
func (e *env) waitStatus(id uuid.UUID, status string) {
	e.t.Helper()
	eventually.OK(e.t, 20*time.Second, func() error {
		if got := e.status(id); got != status {
			return fmt.Errorf("order %s is %q, want %s", id, got, status)
		}
		return nil
	})
}

// settled waits until Redis and PostgreSQL agree on every invariant (the consumer and the jobs
// work asynchronously) and fails the test with the problems if they never do.
func (e *env) settled() reconcile.ItemReport {
	e.t.Helper()
	var rep reconcile.ItemReport
	eventually.OK(e.t, 20*time.Second, func() error {
		reps, err := reconcile.Sale(context.Background(), e.app.Stock, e.app.Orders, e.sale)
		if err != nil {
			e.t.Fatal(err)
		}
		if rep = reps[0]; len(rep.Problems) > 0 {
			return fmt.Errorf("Redis and PostgreSQL never agreed: %v", rep.Problems)
		}
		return nil
	})
	return rep
}
