package loadgen

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/fsctl/fsctl/internal/contract/outcome"
	"github.com/fsctl/fsctl/internal/target/profile"
)

// Action is what a buyer does with a reservation.
type Action string

// The three things a buyer can do with a hold.
const (
	Pay    Action = "pay"
	Cancel Action = "cancel"
	// Abandon sends nothing: the hold expires and the server must return the unit itself.
	Abandon Action = "abandon"
)

// AfterPurchase decides, per buyer and repeatably from Seed, whether a reserved buyer pays (with
// probability Pay), cancels (Cancel) or abandons the hold (the rest).
type AfterPurchase struct {
	Pay, Cancel float64
	Seed        uint64
	// PaymentToken is sent to pay; empty means "tok_ok", which the bundled fake provider accepts.
	PaymentToken string
}

// Validate reports probabilities that do not make a distribution.
func (a AfterPurchase) Validate() error {
	if a.Pay < 0 || a.Cancel < 0 || a.Pay+a.Cancel > 1 {
		return fmt.Errorf("pay %v and cancel %v: want probabilities with pay + cancel <= 1", a.Pay, a.Cancel)
	}
	return nil
}

// Choose is buyer k's decision. It depends on the seed and k only, so a rerun or another shard
// of the same plan makes the same buyers pay.
func (a AfterPurchase) Choose(buyer int) Action {
	u := rand.New(rand.NewPCG(a.Seed, uint64(buyer))).Float64()
	switch {
	case u < a.Pay:
		return Pay
	case u < a.Pay+a.Cancel:
		return Cancel
	}
	return Abandon
}

// FollowUp is what became of one reservation after the purchase.
type FollowUp struct {
	Buyer   int
	OrderID string
	Action  Action
	// Answer is the order's status (PAID, CANCELLED) or the error code the server gave
	// (PAYMENT_DECLINED, EXPIRED, ...); ABANDONED when nothing was sent.
	Answer string
	Status int
	Error  string
}

// Abandoned is the answer of a hold left to expire.
const Abandoned = "ABANDONED"

// notYet are answers that say "ask again in a moment": the order is still on its way to
// PostgreSQL, or a payment of it is in flight.
var notYet = []outcome.Code{outcome.OrderPending, outcome.PaymentInProgress}

// followUp carries out the buyer's decision on the reserved order of r, asking again while the
// server says the order is not recorded yet, until timeout: a POST to the profile's http.pay, or
// a DELETE of its http.order.
func (a AfterPurchase) followUp(ctx context.Context, c *http.Client, prof *profile.Profile, base, token string, r Record, timeout time.Duration, now func() time.Time) FollowUp {
	f := FollowUp{Buyer: r.Buyer, OrderID: r.OrderID, Action: a.Choose(r.Buyer), Answer: Abandoned}
	if f.Action == Abandon {
		return f
	}
	method, body, url := http.MethodDelete, "", orderURL(prof, base, r)
	if f.Action == Pay {
		method, body = http.MethodPost, fmt.Sprintf(`{"paymentToken":%q}`, cmp.Or(a.PaymentToken, "tok_ok"))
		url = profile.Route(base, prof.HTTP.Pay, orderVars(r))
	}
	deadline := now().Add(timeout)
	for {
		a := orderCall(ctx, c, method, url, token, body)
		f.Status, f.Answer, f.Error = a.Status, a.Code, a.Error
		if !slices.Contains(notYet, outcome.Code(f.Answer)) || now().After(deadline) {
			return f
		}
		select {
		case <-ctx.Done():
			return f
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// orderURL is the address of r's order: the profile's http.order.
func orderURL(prof *profile.Profile, base string, r Record) string {
	return profile.Route(base, prof.HTTP.Order, orderVars(r))
}

// orderVars are the values of an order endpoint's placeholders for r's order.
func orderVars(r Record) profile.Vars {
	return profile.Vars{"sale": r.Target.SaleID, "item": r.Target.ItemID, "order": r.OrderID}
}

// orderAnswer is what an order call said: the HTTP status, the order's status or the error code
// (HTTP_<status> when the body says neither, TRANSPORT_ERROR with Error when there was no
// answer), and whether the order is in PostgreSQL yet (GET's persisted).
type orderAnswer struct {
	Status    int
	Code      string
	Persisted bool
	Error     string
}

// orderCall sends one order call and reads its status or error code.
func orderCall(ctx context.Context, c *http.Client, method, url, token, body string) orderAnswer {
	req, err := http.NewRequestWithContext(ctx, method, url, strings.NewReader(body))
	if err != nil {
		return orderAnswer{Code: string(TransportError), Error: err.Error()}
	}
	req.Header.Set("Authorization", "Bearer "+token)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.Do(req)
	if err != nil {
		return orderAnswer{Code: string(TransportError), Error: err.Error()}
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	var ans struct {
		Status, Error string
		Persisted     bool
	}
	if err := json.Unmarshal(raw, &ans); err != nil || cmp.Or(ans.Error, ans.Status) == "" {
		return orderAnswer{Status: resp.StatusCode, Code: fmt.Sprintf("HTTP_%d", resp.StatusCode), Error: "unreadable answer"}
	}
	return orderAnswer{Status: resp.StatusCode, Code: cmp.Or(ans.Error, ans.Status), Persisted: ans.Persisted}
}
