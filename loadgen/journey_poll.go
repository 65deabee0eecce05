package loadgen

import (
	"cmp"
	"context"
	"fmt"
	"net/http"
	"time"
)

// OrderPoll is what a buyer's page does after a RESERVED answer: it asks for the order (a GET of
// the profile's http.order; fsctl serve's /api/v1/orders/{id}) at once and then every Interval until the answer says
// persisted (the order consumer wrote it to PostgreSQL) or Wait has passed since the 202.
type OrderPoll struct {
	Interval, Wait time.Duration
}

// Validate refuses an interval or a bound that is not positive.
func (o OrderPoll) Validate() error {
	if o.Interval <= 0 || o.Wait <= 0 {
		return fmt.Errorf("order polling: interval %s and wait %s must be positive", o.Interval, o.Wait)
	}
	return nil
}

// Persistence is how one reservation reached PostgreSQL, as its buyer saw it by polling.
type Persistence struct {
	Buyer   int
	OrderID string
	// Reserved is when the 202 was read; Persisted when a poll's answer first said persisted,
	// zero when none did within the wait.
	Reserved, Persisted time.Time
	// Polls counts the GETs sent.
	Polls int
	// Last is what the last poll said: the order's status (PENDING, PAID, EXPIRED, ...) or an
	// error code (NOT_FOUND, HTTP_503, TRANSPORT_ERROR); Error is its transport error.
	Last, Error string
}

// TimeToPersisted is from the 202 to the answer that said persisted; false when none did.
func (p Persistence) TimeToPersisted() (time.Duration, bool) {
	if p.Persisted.IsZero() {
		return 0, false
	}
	return p.Persisted.Sub(p.Reserved), true
}

// poll asks for the reserved order r until it is persisted or the wait runs out. The pause
// between polls counts from each answer, as a page's timer does, so a slow answer never piles
// polls up.
func (o OrderPoll) poll(ctx context.Context, c *http.Client, url, token string, r Record, now func() time.Time) Persistence {
	ps := Persistence{Buyer: r.Buyer, OrderID: r.OrderID, Reserved: r.Done}
	giveUp := r.Done.Add(o.Wait)
	for {
		a := orderCall(ctx, c, http.MethodGet, url, token, "")
		ps.Polls++
		ps.Last, ps.Error = a.Code, a.Error
		if a.Persisted {
			ps.Persisted = now()
			return ps
		}
		next := now().Add(o.Interval)
		if next.After(giveUp) {
			return ps
		}
		if err := sleepUntil(ctx, next, now, 0); err != nil {
			ps.Error = cmp.Or(ps.Error, err.Error())
			return ps
		}
	}
}
