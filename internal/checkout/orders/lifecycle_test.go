package orders_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/fsctl/fsctl/internal/checkout/orders"
	"github.com/fsctl/fsctl/internal/contract/outcome"
	"github.com/fsctl/fsctl/internal/contract/sale"
	"github.com/google/uuid"
)

const owner = "alice@example.com"

// target places the case's order (none when state is empty, then a fresh id) and says who acts.
func target(t *testing.T, s *orders.Store, state string, asOther bool) (uuid.UUID, string) {
	t.Helper()
	id, user := uuid.Must(uuid.NewV7()), owner
	if state != "" {
		id = placeIn(t, s, owner, state).OrderID
	}
	if asOther {
		user = "mallory"
	}
	return id, user
}

func TestClaimPayment(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name        string
		state       string // "" for an order that does not exist
		asOther     bool
		want        orders.Claim
		wantCode    outcome.Code // for an error
		wantStatus  string
		wantClaimed bool
		wantSold    int64
	}{
		{name: "pending", state: statePending, want: orders.ClaimOK, wantStatus: orders.StatusPending, wantClaimed: true, wantSold: 1},
		{name: "claimed", state: stateClaimed, want: orders.ClaimBusy, wantStatus: orders.StatusPending, wantClaimed: true, wantSold: 1},
		{name: "pending past expiry", state: stateDue, want: orders.ClaimExpired, wantStatus: orders.StatusPending, wantSold: 1},
		{name: "expired", state: stateExpired, want: orders.ClaimExpired, wantStatus: orders.StatusExpired},
		{name: "paid", state: statePaid, want: orders.ClaimPaid, wantStatus: orders.StatusPaid, wantSold: 1},
		{name: "cancelled", state: stateCancelled, want: orders.ClaimClosed, wantStatus: orders.StatusCancelled},
		{name: "failed", state: stateFailed, want: orders.ClaimClosed, wantStatus: orders.StatusFailed},
		{name: "missing", wantCode: outcome.NotFound},
		{name: "another user's", state: statePending, asOther: true, wantCode: outcome.NotFound, wantStatus: orders.StatusPending, wantSold: 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := lifecycleStore(t)
			id, user := target(t, s, tc.state, tc.asOther)
			o, c, err := s.ClaimPayment(context.Background(), id, user)
			if tc.wantCode != "" {
				if outcome.CodeOf(err) != tc.wantCode || c != 0 {
					t.Fatalf("got %v, %v; want a %s error", c, err, tc.wantCode)
				}
			} else {
				if err != nil || c != tc.want {
					t.Fatalf("got %v, %v; want %v", c, err, tc.want)
				}
				if o.ID != id || o.Status != tc.wantStatus || (o.PayingSince != nil) != tc.wantClaimed || o.Shard != 3 {
					t.Errorf("returned order: got %+v, want %s, claimed %v, shard 3", o, tc.wantStatus, tc.wantClaimed)
				}
			}
			if tc.state != "" {
				checkOrder(t, s, id, tc.wantStatus, tc.wantClaimed)
			}
			checkItem(t, s, "s", "item", tc.wantSold)
		})
	}
}

// transition is a case of an operation that closes a live order (cancel, fail payment).
type transition struct {
	name        string
	state       string
	asOther     bool
	wantChanged bool
	wantCode    outcome.Code
	wantStatus  string
	wantClaimed bool
	wantSold    int64
}

// runTransitions runs op on each case's order and checks its answer, the stored order and sold.
func runTransitions(t *testing.T, tests []transition, op func(s *orders.Store, id uuid.UUID, user string) (orders.Order, bool, error)) {
	t.Helper()
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := lifecycleStore(t)
			id, user := target(t, s, tc.state, tc.asOther)
			o, changed, err := op(s, id, user)
			if tc.wantCode != "" {
				if outcome.CodeOf(err) != tc.wantCode || changed {
					t.Fatalf("got %v, %v; want a %s error", changed, err, tc.wantCode)
				}
			} else if err != nil || changed != tc.wantChanged || o.ID != id || o.Status != tc.wantStatus {
				t.Fatalf("got %+v, %v, %v; want status %s, changed %v", o, changed, err, tc.wantStatus, tc.wantChanged)
			}
			if tc.state != "" {
				checkOrder(t, s, id, tc.wantStatus, tc.wantClaimed)
			}
			checkItem(t, s, "s", "item", tc.wantSold)
		})
	}
}

func TestCancel(t *testing.T) {
	t.Parallel()
	runTransitions(t, []transition{
		{name: "pending", state: statePending, wantChanged: true, wantStatus: orders.StatusCancelled},
		{name: "cancelled again", state: stateCancelled, wantStatus: orders.StatusCancelled},
		{name: "claimed", state: stateClaimed, wantCode: outcome.PaymentInProgress, wantStatus: orders.StatusPending, wantClaimed: true, wantSold: 1},
		{name: "paid", state: statePaid, wantCode: outcome.OrderClosed, wantStatus: orders.StatusPaid, wantSold: 1},
		{name: "failed", state: stateFailed, wantCode: outcome.OrderClosed, wantStatus: orders.StatusFailed},
		{name: "expired", state: stateExpired, wantCode: outcome.Expired, wantStatus: orders.StatusExpired},
		{name: "pending past expiry", state: stateDue, wantCode: outcome.Expired, wantStatus: orders.StatusPending, wantSold: 1},
		{name: "missing", wantCode: outcome.NotFound},
		{name: "another user's", state: statePending, asOther: true, wantCode: outcome.NotFound, wantStatus: orders.StatusPending, wantSold: 1},
	}, func(s *orders.Store, id uuid.UUID, user string) (orders.Order, bool, error) {
		return s.Cancel(context.Background(), id, user)
	})
}

func TestFailPayment(t *testing.T) {
	t.Parallel()
	runTransitions(t, []transition{
		{name: "claimed", state: stateClaimed, wantChanged: true, wantStatus: orders.StatusFailed},
		{name: "failed again", state: stateFailed, wantStatus: orders.StatusFailed},
		{name: "unclaimed pending", state: statePending, wantStatus: orders.StatusPending, wantSold: 1},
		{name: "paid", state: statePaid, wantStatus: orders.StatusPaid, wantSold: 1},
		{name: "expired", state: stateExpired, wantStatus: orders.StatusExpired},
		{name: "cancelled", state: stateCancelled, wantStatus: orders.StatusCancelled},
		{name: "missing", wantCode: outcome.NotFound},
	}, func(s *orders.Store, id uuid.UUID, _ string) (orders.Order, bool, error) {
		return s.FailPayment(context.Background(), id)
	})
}

func TestMarkPaid(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name        string
		state       string
		wantChanged bool
		wantCode    outcome.Code
		wantStatus  string
		wantRef     string
		wantSold    int64
	}{
		{name: "claimed", state: stateClaimed, wantChanged: true, wantStatus: orders.StatusPaid, wantRef: "ref-2", wantSold: 1},
		{name: "unclaimed pending", state: statePending, wantChanged: true, wantStatus: orders.StatusPaid, wantRef: "ref-2", wantSold: 1},
		{name: "pending past expiry: the money was taken", state: stateDue, wantChanged: true, wantStatus: orders.StatusPaid, wantRef: "ref-2", wantSold: 1},
		{name: "paid twice keeps the first ref", state: statePaid, wantStatus: orders.StatusPaid, wantRef: "ref-1", wantSold: 1},
		{name: "expired", state: stateExpired, wantStatus: orders.StatusExpired},
		{name: "cancelled", state: stateCancelled, wantStatus: orders.StatusCancelled},
		{name: "failed", state: stateFailed, wantStatus: orders.StatusFailed},
		{name: "missing", wantCode: outcome.NotFound},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := lifecycleStore(t)
			id, _ := target(t, s, tc.state, false)
			o, changed, err := s.MarkPaid(context.Background(), id, "ref-2")
			if tc.wantCode != "" {
				if outcome.CodeOf(err) != tc.wantCode || changed {
					t.Fatalf("got %v, %v; want a %s error", changed, err, tc.wantCode)
				}
			} else if err != nil || changed != tc.wantChanged || o.ID != id || o.Status != tc.wantStatus || o.PaymentRef != tc.wantRef {
				t.Fatalf("got %+v, %v, %v; want status %s, ref %q, changed %v", o, changed, err, tc.wantStatus, tc.wantRef, tc.wantChanged)
			}
			if tc.state != "" {
				if got := checkOrder(t, s, id, tc.wantStatus, false); got.PaymentRef != tc.wantRef {
					t.Errorf("stored payment ref %q, want %q", got.PaymentRef, tc.wantRef)
				}
			}
			checkItem(t, s, "s", "item", tc.wantSold)
		})
	}
}

func TestReleaseClaim(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		state      string
		want       bool
		wantStatus string
		wantSold   int64
	}{
		{name: "claimed", state: stateClaimed, want: true, wantStatus: orders.StatusPending, wantSold: 1},
		{name: "unclaimed", state: statePending, wantStatus: orders.StatusPending, wantSold: 1},
		{name: "paid", state: statePaid, wantStatus: orders.StatusPaid, wantSold: 1},
		{name: "failed", state: stateFailed, wantStatus: orders.StatusFailed},
		{name: "missing"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := lifecycleStore(t)
			id, _ := target(t, s, tc.state, false)
			got, err := s.ReleaseClaim(context.Background(), id)
			if err != nil || got != tc.want {
				t.Fatalf("got %v, %v; want %v", got, err, tc.want)
			}
			if tc.state != "" {
				checkOrder(t, s, id, tc.wantStatus, false)
			}
			checkItem(t, s, "s", "item", tc.wantSold)
		})
	}
}

// A released claim makes the order payable again, and expirable: the resolver's two outcomes.
func TestReleasedClaimCanBePaidOrExpire(t *testing.T) {
	t.Parallel()
	s := lifecycleStore(t)
	ctx := context.Background()
	payLater := placeIn(t, s, "u1", stateClaimed)
	lapse := placeIn(t, s, "u2", stateClaimed)
	makeDue(t, s, lapse.OrderID)
	if got, err := s.ExpireDue(ctx, 10); err != nil || len(got) != 0 {
		t.Fatalf("expire while claimed: got %+v, %v; want nothing expired", got, err)
	}
	for _, p := range []orders.Placement{payLater, lapse} {
		if ok, err := s.ReleaseClaim(ctx, p.OrderID); err != nil || !ok {
			t.Fatalf("release %s: %v, %v", p.OrderID, ok, err)
		}
	}
	mustClaim(t, s, payLater)
	got, err := s.ExpireDue(ctx, 10)
	if err != nil || len(got) != 1 || got[0].ID != lapse.OrderID {
		t.Fatalf("expire after release: got %+v, %v; want just %s", got, err, lapse.OrderID)
	}
	checkOrder(t, s, payLater.OrderID, orders.StatusPending, true)
	checkOrder(t, s, lapse.OrderID, orders.StatusExpired, false)
	checkItem(t, s, "s", "item", 1)
}

func TestClaimString(t *testing.T) {
	t.Parallel()
	want := map[orders.Claim]string{
		orders.ClaimOK: "ok", orders.ClaimBusy: "busy", orders.ClaimExpired: "expired",
		orders.ClaimPaid: "paid", orders.ClaimClosed: "closed", 0: "Claim(0)",
	}
	for c, w := range want {
		if c.String() != w {
			t.Errorf("Claim(%d).String() = %q, want %q", int(c), c.String(), w)
		}
	}
}

// TestClaimWhileTheOrderIsRecorded pays for orders at the moment the consumer records them, as a
// buyer does who pays right after the reserve: the first answer that is not "not found" must be
// the claim itself, never "busy" for an order nobody was paying.
func TestClaimWhileTheOrderIsRecorded(t *testing.T) {
	t.Parallel()
	s := openStore(t)
	ctx := context.Background()
	const n = 100
	if err := s.SaveSale(ctx, testSale("race", sale.Item{ID: "item", Quantity: n})); err != nil {
		t.Fatal(err)
	}
	ps := make([]orders.Placement, n)
	for i := range ps {
		ps[i] = placement("race", "item", fmt.Sprintf("early-%d", i), 0)
	}
	var wg sync.WaitGroup
	claims := make([]orders.Claim, n)
	for i := range ps {
		wg.Go(func() {
			for {
				_, c, err := s.ClaimPayment(ctx, ps[i].OrderID, ps[i].UserID)
				if outcome.CodeOf(err) == outcome.NotFound {
					continue
				}
				if err != nil {
					t.Error(err)
				}
				claims[i] = c
				return
			}
		})
	}
	for i := range ps {
		mustPlace(t, s, ps[i:i+1], orders.Placed)
	}
	wg.Wait()
	for i, c := range claims {
		if c != orders.ClaimOK {
			t.Fatalf("order %d: first answer once recorded %v, want ok", i, c)
		}
	}
}
