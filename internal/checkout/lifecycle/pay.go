package lifecycle

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/fsctl/fsctl/internal/checkout/events"
	"github.com/fsctl/fsctl/internal/checkout/orders"
	"github.com/fsctl/fsctl/internal/checkout/payment"
	"github.com/fsctl/fsctl/internal/checkout/stock"
	"github.com/fsctl/fsctl/internal/contract/outcome"
)

// PayRequest is a buyer paying for one order.
type PayRequest struct {
	OrderID uuid.UUID
	UserID  string
	Token   string
}

// PayResult is a successful payment.
type PayResult struct {
	Order      orders.Order
	PaymentRef string
	// Replay is true when the order had been paid before this request.
	Replay bool
}

// Pay runs the payment saga for one order. The claim in PostgreSQL comes first, so an expiry can
// no longer take the order; then the provider is charged with the order id as idempotency key.
// Paid: OrderPaid goes to Kafka and the consumer records it. Declined or provider unavailable:
// the order fails and its unit is released at once. An outcome the provider cannot confirm
// (a timeout) is voided first, so a late charge cannot land on a released order.
//
// Every refusal is an *outcome.Error: EXPIRED, PAYMENT_IN_PROGRESS, ORDER_CLOSED, PAYMENT_DECLINED,
// PAYMENT_UNAVAILABLE, ORDER_NOT_RECORDED_YET or NOT_FOUND.
func (s *Service) Pay(ctx context.Context, req PayRequest) (PayResult, error) {
	var o orders.Order
	var claim orders.Claim
	err := s.recorded(ctx, req.OrderID, req.UserID, func(ctx context.Context) (err error) {
		o, claim, err = s.Orders.ClaimPayment(ctx, req.OrderID, req.UserID)
		return err
	})
	if err != nil {
		return PayResult{}, err
	}
	switch claim {
	case orders.ClaimOK:
	case orders.ClaimPaid:
		return PayResult{Order: o, PaymentRef: o.PaymentRef, Replay: true}, nil
	case orders.ClaimBusy:
		return PayResult{}, outcome.Errorf(outcome.PaymentInProgress, "a payment for order %s is in progress; poll the order", o.ID)
	case orders.ClaimExpired:
		return PayResult{}, outcome.Errorf(outcome.Expired, "order %s expired before it was paid; its unit went back on sale", o.ID)
	default:
		return PayResult{}, outcome.Errorf(outcome.OrderClosed, "order %s is %s and cannot be paid", o.ID, o.Status)
	}
	amount, err := s.price(ctx, o)
	if err != nil {
		s.Log.Error("price of a claimed order", "order", o.ID, "err", err)
		return PayResult{}, s.failClaimed(ctx, o, "price_unknown", outcome.Errorf(outcome.PaymentUnavailable, "the order's price could not be read; nothing was charged and the unit was released"))
	}
	// The buyer hanging up must not leave a charge half-done: the saga runs on its own clock.
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.cfg.PaymentTimeout)
	rc, err := s.Payments.Charge(cctx, payment.Charge{OrderID: o.ID, AmountCents: amount, Currency: s.cfg.Currency, Token: req.Token})
	cancel()
	if errors.Is(err, payment.ErrUnknownOutcome) {
		s.count("unknown")
		vctx, vcancel := context.WithTimeout(context.WithoutCancel(ctx), s.cfg.PaymentTimeout)
		rc, err = s.Payments.Void(vctx, o.ID)
		vcancel()
		if err != nil {
			s.Log.Warn("payment outcome unknown and void failed; the claim resolver settles it", "order", o.ID, "err", err)
			return PayResult{}, outcome.Errorf(outcome.PaymentUnavailable,
				"the payment provider did not answer; order %s is settled within %s — poll it", o.ID, s.cfg.ClaimTimeout)
		}
	}
	switch {
	case err == nil && rc.Status == payment.Succeeded:
		return s.paid(ctx, o, rc.ID)
	case err == nil && rc.Status == payment.Declined:
		s.count("declined")
		return PayResult{}, s.failClaimed(ctx, o, "declined", outcome.Errorf(outcome.PaymentDeclined,
			"the payment was declined (%s); the unit was released", orDefault(rc.Reason, "no reason given")))
	default:
		s.count("unavailable")
		if err == nil {
			err = fmt.Errorf("provider answered %s", rc.Status)
		}
		s.Log.Warn("payment unavailable; releasing the order", "order", o.ID, "err", err)
		return PayResult{}, s.failClaimed(ctx, o, "payment_unavailable", outcome.Errorf(outcome.PaymentUnavailable,
			"the payment provider is unavailable; nothing was charged and the unit was released"))
	}
}

// paid records a successful charge: OrderPaid to Kafka (the consumer marks the order PAID and
// settles the hold); if Kafka cannot take it, the order is marked paid directly, because the
// buyer's money is taken either way.
func (s *Service) paid(ctx context.Context, o orders.Order, ref string) (PayResult, error) {
	s.count("paid")
	pctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	err := s.Publisher.PublishOrderPaid(pctx, events.OrderPaid{
		OrderID: o.ID, SaleID: o.SaleID, ItemID: o.ItemID, UserID: o.UserID, Shard: o.Shard, Shards: o.Shards,
		PaymentRef: ref, PaidAt: s.Now().UTC(),
	})
	if err != nil {
		s.Log.Warn("publish OrderPaid failed; recording the payment directly", "order", o.ID, "err", err)
		if err := s.settlePaid(pctx, o, ref); err != nil {
			// The claim stays; the claim resolver finds the charge with the provider and retries.
			s.Log.Error("record payment failed; the claim resolver retries", "order", o.ID, "err", err)
		}
	}
	o.PaymentRef = ref
	return PayResult{Order: o, PaymentRef: ref}, nil
}

// settlePaid marks the order PAID in PostgreSQL, then takes its hold off the expiry clock in Redis.
func (s *Service) settlePaid(ctx context.Context, o orders.Order, ref string) error {
	if _, _, err := s.Orders.MarkPaid(ctx, o.ID, ref); err != nil {
		return err
	}
	_, err := s.Stock.Settle(ctx, stock.Settle{SaleID: o.SaleID, ItemID: o.ItemID, Shard: o.Shard, Shards: o.Shards, OrderID: o.ID})
	return err
}

// failClaimed fails a claimed order in PostgreSQL and then releases its unit; it returns answer,
// or an UNAVAILABLE error when the database could not record the failure (the claim resolver
// finishes it later).
func (s *Service) failClaimed(ctx context.Context, o orders.Order, reason string, answer error) error {
	fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	failed, changed, err := s.Orders.FailPayment(fctx, o.ID)
	if err != nil {
		s.Log.Error("fail payment in PostgreSQL", "order", o.ID, "err", err)
		return outcome.Errorf(outcome.PaymentUnavailable, "the payment did not go through and the order could not be closed yet; it is settled within %s", s.cfg.ClaimTimeout)
	}
	if changed {
		s.release(fctx, failed, reason)
	}
	return answer
}

func (s *Service) price(ctx context.Context, o orders.Order) (int64, error) {
	sl, err := s.Orders.LoadSale(ctx, o.SaleID)
	if err != nil {
		return 0, err
	}
	it, ok := sl.Item(o.ItemID)
	if !ok {
		return 0, fmt.Errorf("sale %s has no item %s", o.SaleID, o.ItemID)
	}
	return it.PriceCents, nil
}

func (s *Service) count(result string) {
	if s.Metrics.Payments != nil {
		s.Metrics.Payments(result)
	}
}

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}
