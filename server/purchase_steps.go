package server

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/fsctl/fsctl/internal/checkout/control"
	"github.com/fsctl/fsctl/internal/checkout/stock"
	"github.com/fsctl/fsctl/internal/contract/outcome"
	"github.com/fsctl/fsctl/internal/contract/sale"
	"github.com/fsctl/fsctl/internal/platform/tracing"
)

// purchaseAttempt is one purchase on its way through the admission steps of Server.purchase.
// Each step reports whether the purchase goes on; one that returns false has answered the buyer.
// It lives on purchase's stack: no step keeps it.
type purchaseAttempt struct {
	s       *Server
	w       http.ResponseWriter // the statusRecorder once an admission ticket is held
	r       *http.Request
	viaPath bool

	user    string
	req     purchaseRequest
	sl      sale.Sale
	it      sale.Item
	ticket  string
	rec     *statusRecorder // set with ticket: the answer that frees the buyer's slot
	ref     stock.ItemRef
	flagged bool // the item carries this instance's sold-out flag

	ctx    context.Context // from the reserve on: the request's own clock, not the buyer's
	cancel context.CancelFunc
	rv     stock.Reservation
}

// fail counts and answers err, and ends the chain.
func (p *purchaseAttempt) fail(err error) bool {
	p.s.countAndWriteError(p.w, p.r, err)
	return false
}

// end runs when purchase returns, whichever step answered.
func (p *purchaseAttempt) end() {
	if p.cancel != nil {
		p.cancel()
	}
	if p.rec != nil {
		if st := p.rec.status; st == http.StatusAccepted || st == http.StatusConflict || st == http.StatusGone {
			p.s.revoke(p.sl.ID, p.ticket)
		}
	}
}

// authenticate finds the buyer in the Authorization header.
func (p *purchaseAttempt) authenticate() bool {
	user, err := p.s.auth.UserFromHeader(p.r.Header.Get("Authorization"))
	if err != nil {
		return p.fail(err)
	}
	p.user = user
	return true
}

// readRequest parses the sale, item, Idempotency-Key and (capped) body of the purchase.
func (p *purchaseAttempt) readRequest() bool {
	if p.r.Body != http.NoBody { // most purchases carry none: nothing to wrap or read
		p.r.Body = http.MaxBytesReader(p.w, p.r.Body, MaxPurchaseBody+1)
	}
	req, err := parsePurchase(p.r.PathValue("sale"), p.r.PathValue("item"), p.r.Header.Get("Idempotency-Key"), p.r.Body)
	if err != nil {
		return p.fail(err)
	}
	p.req = req
	return true
}

// purchasesOn answers 503 DISABLED while the operator's kill switch of purchases is thrown.
func (p *purchaseAttempt) purchasesOn() bool {
	if p.s.sw.Off(control.Purchase) {
		return p.fail(outcome.Errorf(outcome.Disabled, "purchases are switched off by the operator; retry later"))
	}
	return true
}

// findItem looks the sale and item up in the read model (span "sale lookup").
func (p *purchaseAttempt) findItem() bool {
	s := p.s
	s.traceItem(p.r, p.req.SaleID, p.req.ItemID)
	lctx, lookup := tracing.Child(p.r.Context(), s.tracer, "sale lookup", trace.SpanKindInternal)
	sl, it, err := s.saleItem(lctx, p.req.SaleID, p.req.ItemID)
	lookup.End()
	if err != nil {
		return p.fail(err)
	}
	p.sl, p.it = sl, it
	return true
}

// checkPath holds a sale with a reveal to its purchase path (reveal.go).
func (p *purchaseAttempt) checkPath() bool {
	if err := p.s.checkPurchasePath(p.r, p.sl, p.it.ID, p.user, p.viaPath); err != nil {
		return p.fail(err)
	}
	return true
}

// admit applies the sale's rate limits (429 with Retry-After) and its waiting room's admission
// token (span "admission").
func (p *purchaseAttempt) admit() bool {
	s := p.s
	_, admit := tracing.Child(p.r.Context(), s.tracer, "admission", trace.SpanKindInternal)
	if !s.allowRate(p.w, p.r, p.sl, "purchase", p.user) {
		admit.End()
		return false
	}
	ticket, err := s.admission(p.r, p.sl, p.user)
	admit.End()
	if err != nil {
		return p.fail(err)
	}
	p.ticket = ticket
	return true
}

// freeSlotOnAnswer watches the answer of an admitted buyer: once the checkout has a final answer
// (reserved, sold out, already purchased, sale ended: 202, 409 or 410, whichever step gave it)
// the slot goes to the next buyer in line at once (end).
func (p *purchaseAttempt) freeSlotOnAnswer() bool {
	if p.ticket != "" {
		p.rec = &statusRecorder{ResponseWriter: p.w, status: http.StatusOK}
		p.w = p.rec
	}
	return true
}

// saleOpen answers NOT_STARTED before the sale's schedule opens it and SALE_ENDED after.
func (p *purchaseAttempt) saleOpen() bool {
	if now := p.s.now(); !p.sl.OpenAt(now) {
		code := outcome.NotStarted
		if p.sl.Ended(now) {
			code = outcome.SaleEnded
		}
		p.s.writeOutcome(p.w, p.r, code, p.req)
		return false
	}
	return true
}

// soldOutFlag consults this instance's sold-out flag of the item: in trust mode a flagged item
// is answered SOLD_OUT here; in verify mode the reserve asks its home shard alone.
func (p *purchaseAttempt) soldOutFlag() bool {
	s := p.s
	p.ref = stock.ItemRef{SaleID: p.sl.ID, ItemID: p.it.ID, Shards: p.it.ShardCount()}
	p.flagged = s.cfg.SoldOut != SoldOutOff && s.soldOut.has(p.ref)
	if p.flagged {
		s.metrics.soldOutFlag.Inc()
		if s.cfg.SoldOut == SoldOutTrust {
			s.writeOutcome(p.w, p.r, outcome.SoldOut, p.req)
			return false
		}
	}
	return true
}

// reserve runs the reserve script (span "reserve") under a new order id.
func (p *purchaseAttempt) reserve() bool {
	s, req, sl := p.s, &p.req, &p.sl
	orderID, err := s.newID()
	if err != nil {
		return p.fail(err)
	}
	// A buyer who hangs up must not cut the path between the reserve and the hand-off: that
	// would leave a hold with no order. From here on the request runs to its end on its own clock:
	// the reserve call on the shared one (no timer of its own: most purchases of a burst end with
	// it), a reservation's hand-off on a deadline of its own from the same start.
	start := time.Now()
	p.ctx = s.reserveClock.on(p.r.Context())
	rctx, span := tracing.Child(p.ctx, s.tracer, "reserve", trace.SpanKindClient)
	rv, err := s.stock.Reserve(rctx, stock.Request{
		SaleID: req.SaleID, ItemID: req.ItemID, UserID: p.user, IdemKey: req.IdemKey, OrderID: orderID,
		Shards: p.ref.Shards, WaitReplicas: sl.WaitReplicas, WaitTimeout: sl.WaitTimeout,
		// Under the flag the script answers from the buyer's home shard alone (no borrowing), so
		// a sold-out item costs one call whose answer is still the script's own.
		NoBorrow:  p.flagged,
		SaleLimit: sl.PerSaleLimit,
	})
	s.metrics.reserve.Observe(time.Since(start).Seconds())
	endReserve(span, rv, err)
	if err != nil {
		return p.fail(s.reserveFailed(p.req, err))
	}
	p.rv = rv
	if rv.Outcome == outcome.Reserved { // handed off (again) before it is answered
		p.ctx, p.cancel = context.WithDeadline(context.WithoutCancel(p.r.Context()), start.Add(s.reserveClock.d))
	}
	return true
}

// reserveFailed turns the reserve script's error into the buyer's: 503 UNAVAILABLE for a store
// that failed or lost the item's state, any other code as it is.
func (s *Server) reserveFailed(req purchaseRequest, err error) error {
	switch outcome.CodeOf(err) {
	case outcome.Internal:
		s.log.Error("reserve failed", "sale", req.SaleID, "item", req.ItemID, "err", err)
		err = outcome.Errorf(outcome.Unavailable, "stock store unavailable; nothing was reserved; retry with the same Idempotency-Key")
	case outcome.NotFound:
		// PostgreSQL's catalog has the item (saleItem found it), Redis does not: its state was
		// lost or is being rebuilt. That is a pause, not an answer about the sale.
		s.log.Warn("item on sale but not in Redis (lost, or being rebuilt)", "sale", req.SaleID, "item", req.ItemID)
		err = outcome.Errorf(outcome.Unavailable, "the item's stock is not loaded right now (it is being restored); nothing was reserved; retry with the same Idempotency-Key")
	}
	return err
}

// noteReservation counts the units the script borrowed and logs an order reference not written.
func (p *purchaseAttempt) noteReservation() bool {
	if p.rv.Borrowed > 0 {
		p.s.metrics.borrowed.Add(float64(p.rv.Borrowed))
	}
	if p.rv.RefErr != nil {
		p.s.log.Warn("order reference not written; lookups of the order wait for PostgreSQL", "order", p.rv.OrderID, "err", p.rv.RefErr)
	}
	return true
}

// replicasAcked applies the sale's waitPolicy to a fresh reservation fewer replicas acknowledged
// than it asked for (shortWait).
func (p *purchaseAttempt) replicasAcked() bool {
	rv, sl := &p.rv, &p.sl
	if sl.WaitReplicas > 0 && !rv.Replay && rv.Outcome == outcome.Reserved && rv.Replicas < sl.WaitReplicas {
		if err := p.s.shortWait(p.ctx, p.sl, p.req, p.user, p.rv); err != nil {
			return p.fail(err)
		}
	}
	return true
}

// withinSaleLimit answers ALREADY_PURCHASED when the script refused the buyer for the sale's
// per-buyer limit across its items.
func (p *purchaseAttempt) withinSaleLimit() bool {
	if p.rv.SaleLimited {
		p.s.answerOutcome(p.w, p.r, outcome.AlreadyPurchased,
			fmt.Sprintf("you already hold %d unit(s) of sale %s, the most it allows one buyer across its items", p.sl.PerSaleLimit, p.sl.ID))
		return false
	}
	return true
}

// answer flags an item the script found sold out, and answers the script's outcome (a fresh
// reservation is handed to Kafka first: answerReservation).
func (p *purchaseAttempt) answer() {
	if p.rv.Outcome == outcome.SoldOut && !p.rv.Replay {
		p.s.soldOut.set(p.ref)
	}
	p.s.answerReservation(p.ctx, p.w, p.r, p.req, p.user, p.rv)
}
