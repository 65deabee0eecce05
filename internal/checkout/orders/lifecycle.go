package orders

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/fsctl/fsctl/internal/contract/outcome"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// The order lifecycle in PostgreSQL. An order is live (holds a unit, counted in sale_items.sold)
// while PENDING or PAID; leaving those statuses gives the unit back. Every transaction that changes
// liveness locks the item row before any order row, as place_order does, so the consumer, the
// expiry job on every server instance, cancels and failed payments never deadlock. Moves that keep
// an order live (claiming, paying) take only the order's row lock and never wait for an item row,
// so they cannot close a cycle either.

// Claim is how a payment claim on an order ended.
type Claim int

// The answers of ClaimPayment. The zero value is no answer, so an ignored error cannot read as ok.
const (
	// ClaimOK: the caller holds the claim and may charge; the order cannot expire until the claim
	// is resolved by MarkPaid, FailPayment or ReleaseClaim.
	ClaimOK Claim = iota + 1
	// ClaimBusy: another payment of the order is under way.
	ClaimBusy
	// ClaimExpired: the hold ran out (the order is EXPIRED, or PENDING past expires_at and about
	// to be expired); nothing may be charged.
	ClaimExpired
	// ClaimPaid: the order is paid already.
	ClaimPaid
	// ClaimClosed: the order was cancelled or its payment failed.
	ClaimClosed
)

// String returns the claim's name.
func (c Claim) String() string {
	switch c {
	case ClaimOK:
		return "ok"
	case ClaimBusy:
		return "busy"
	case ClaimExpired:
		return "expired"
	case ClaimPaid:
		return "paid"
	case ClaimClosed:
		return "closed"
	default:
		return fmt.Sprintf("Claim(%d)", int(c))
	}
}

// readOrder reads an order with whether it is past expires_at by the database's clock (the clock
// every other lifecycle decision uses). A missing order is pgx.ErrNoRows.
func readOrder(ctx context.Context, q Queryer, id uuid.UUID) (o Order, due bool, err error) {
	o, err = scanOrder(q.QueryRow(ctx, `SELECT `+orderColumns+`, expires_at <= now() FROM orders WHERE id = $1`, id), &due)
	return o, due, err
}

// notFound is the answer for a missing order and for another user's, so ids cannot be probed.
func notFound(id uuid.UUID) error {
	return outcome.Errorf(outcome.NotFound, "order %s not found", id)
}

// claimOf says why an order that a claim or a cancel could not take is out of reach.
func claimOf(o Order, due bool) Claim {
	switch o.Status {
	case StatusPending:
		// A claim outranks expiry: a claimed order is never expired. An unclaimed, not yet due
		// order here was claimed when the caller's UPDATE ran and released since; busy is what
		// the caller met.
		if o.PayingSince != nil || !due {
			return ClaimBusy
		}
		return ClaimExpired
	case StatusPaid:
		return ClaimPaid
	case StatusExpired:
		return ClaimExpired
	default:
		return ClaimClosed
	}
}

// ClaimPayment takes the payment claim on the user's order in one UPDATE: only a PENDING,
// unclaimed order before its expires_at can be claimed, and the expiry job skips claimed orders,
// so a charge and an expiry can never both win. When the claim is not taken the order is read and
// classified (ClaimBusy, ClaimExpired, ClaimPaid, ClaimClosed) with a nil error. An order that does
// not exist or belongs to another user is an *outcome.Error with code outcome.NotFound.
func (s *Store) ClaimPayment(ctx context.Context, id uuid.UUID, userID string) (Order, Claim, error) {
	for attempt := 0; ; attempt++ {
		o, err := scanOrder(s.pool.QueryRow(ctx, `
			UPDATE orders SET paying_since = now(), updated_at = now()
			WHERE id = $1 AND user_id = $2 AND status = 'PENDING' AND paying_since IS NULL AND expires_at > now()
			RETURNING `+orderColumns, id, userID))
		if err == nil {
			return o, ClaimOK, nil
		}
		if !errors.Is(err, pgx.ErrNoRows) {
			return Order{}, 0, fmt.Errorf("claim payment of order %s: %w", id, err)
		}
		o, due, err := readOrder(ctx, s.pool, id)
		if errors.Is(err, pgx.ErrNoRows) || (err == nil && o.UserID != userID) {
			return Order{}, 0, notFound(id)
		}
		if err != nil {
			return Order{}, 0, fmt.Errorf("claim payment of order %s: %w", id, err)
		}
		// Claimable now: the order was recorded (or its claim released) between the UPDATE and
		// this read, so the UPDATE simply missed it; try again rather than answer "busy".
		if o.Status == StatusPending && o.PayingSince == nil && !due && attempt < 3 {
			continue
		}
		return o, claimOf(o, due), nil
	}
}

// markPaidSQL moves a PENDING order, claimed or not, to PAID. An unclaimed one is accepted too:
// the money was taken, and a paid order must never be expired. sold is untouched (PAID is live),
// so no item lock is needed.
const markPaidSQL = `
	UPDATE orders SET status = 'PAID', payment_ref = nullif($2, ''), paying_since = NULL, updated_at = now()
	WHERE id = $1 AND status = 'PENDING'`

// MarkPaid records a successful payment: a PENDING order becomes PAID with paymentRef, and its
// claim is cleared. The bool reports whether this call changed it; an order already PAID, or in
// any other status, comes back unchanged with false, so the caller can tell a redelivery from a
// charge that came too late (an EXPIRED, CANCELLED or FAILED order that was paid needs a refund and
// a loud log). A missing order is an *outcome.Error with code outcome.NotFound.
func (s *Store) MarkPaid(ctx context.Context, id uuid.UUID, paymentRef string) (Order, bool, error) {
	o, err := scanOrder(s.pool.QueryRow(ctx, markPaidSQL+` RETURNING `+orderColumns, id, paymentRef))
	if err == nil {
		return o, true, nil
	}
	if !errors.Is(err, pgx.ErrNoRows) {
		return Order{}, false, fmt.Errorf("mark order %s paid: %w", id, err)
	}
	o, _, err = readOrder(ctx, s.pool, id)
	if errors.Is(err, pgx.ErrNoRows) {
		return Order{}, false, notFound(id)
	}
	if err != nil {
		return Order{}, false, fmt.Errorf("mark order %s paid: %w", id, err)
	}
	return o, false, nil
}

// PaidMark is one payment to record, as carried by an OrderPaid event.
type PaidMark struct {
	OrderID    uuid.UUID
	PaymentRef string
}

// PaidResult is what MarkPaidBatch did with one mark. The embedded Order is the order as it stands
// after the batch (its sale, item, shard, user and status); it is zero when Missing.
type PaidResult struct {
	Order
	OrderID uuid.UUID // the mark's order id, set even when Missing
	Changed bool      // this mark moved the order from PENDING to PAID
	// Missing: no such order. Kafka's per-partition order delivers OrderPlaced first, so this
	// means the placement was refused or lost; the caller should count it loudly.
	Missing bool
}

// MarkPaidBatch is MarkPaid for a batch of marks in one transaction and one round trip, for the
// order consumer. Results come back in the order of marks; an id marked twice changes once. An error
// means nothing was committed and the batch may be retried whole: marks that landed then answer
// unchanged. A payment reference PostgreSQL refuses fails the batch with an error IsRejected
// recognises, so the consumer can isolate it.
func (s *Store) MarkPaidBatch(ctx context.Context, marks []PaidMark) ([]PaidResult, error) {
	if len(marks) == 0 {
		return nil, nil
	}
	// Lock order rows in id order, so two batches that share orders (after a rebalance) cannot
	// deadlock; answers are put back in the caller's order.
	order := make([]int, len(marks))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return bytes.Compare(marks[a].OrderID[:], marks[b].OrderID[:]) })
	b := &pgx.Batch{}
	for _, i := range order {
		m := marks[i]
		b.Queue(markPaidSQL, m.OrderID, m.PaymentRef)
		// A statement of its own, so it sees this batch's update or, when the order was not ours to
		// change, whatever committed last (one snapshot per statement in READ COMMITTED).
		b.Queue(`SELECT `+orderColumns+` FROM orders WHERE id = $1`, m.OrderID)
	}
	br := s.pool.SendBatch(ctx, b)
	out := make([]PaidResult, len(marks))
	for _, i := range order {
		id := marks[i].OrderID
		tag, err := br.Exec()
		if err != nil {
			br.Close()
			return nil, fmt.Errorf("mark order %s paid: %w", id, err)
		}
		o, err := scanOrder(br.QueryRow())
		switch {
		case errors.Is(err, pgx.ErrNoRows):
			out[i] = PaidResult{OrderID: id, Missing: true}
		case err != nil:
			br.Close()
			return nil, fmt.Errorf("read paid order %s: %w", id, err)
		default:
			out[i] = PaidResult{Order: o, OrderID: id, Changed: tag.RowsAffected() == 1}
		}
	}
	// Close reads the final Sync: only then is the implicit transaction known to be committed.
	if err := br.Close(); err != nil {
		return nil, fmt.Errorf("mark paid batch: %w", err)
	}
	return out, nil
}
