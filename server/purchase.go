package server

import (
	"context"
	"net/http"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/fsctl/fsctl/internal/checkout/events"
	"github.com/fsctl/fsctl/internal/checkout/stock"
	"github.com/fsctl/fsctl/internal/contract/outcome"
	"github.com/fsctl/fsctl/internal/contract/sale"
	"github.com/fsctl/fsctl/internal/platform/tracing"
)

// reserveBudget is the time a purchase allows its Redis calls, on top of the publish timeout.
const reserveBudget = 2 * time.Second

// reservedBody is the 202 answer to a purchase.
type reservedBody struct {
	OrderID   string    `json:"orderId"`
	Status    string    `json:"status"`
	ExpiresAt time.Time `json:"expiresAt"`
}

// handlePurchase is the hot path: verify the buyer, run ONE reserve script, and for a fresh
// reservation hand the order to Kafka before saying yes. A "yes" is only sent once the order is
// durable in Kafka; if the hand-off fails the unit is released and the buyer is told to retry.
func (s *Server) handlePurchase(w http.ResponseWriter, r *http.Request) { s.purchase(w, r, false) }

// purchase is handlePurchase's work, shared with the route of a revealed purchase path (viaPath:
// handleRevealedPurchase), whose token is checked right after the sale lookup. It is a chain of
// admission steps (purchase_steps.go), in this order: each passes the attempt on, or answers the
// buyer itself and ends the chain there.
func (s *Server) purchase(w http.ResponseWriter, r *http.Request, viaPath bool) {
	p := purchaseAttempt{s: s, w: w, r: r, viaPath: viaPath}
	defer p.end()
	if p.authenticate() &&
		p.readRequest() &&
		p.purchasesOn() &&
		p.findItem() &&
		p.checkPath() && // reveal (reveal.go): before any Redis work
		p.admit() &&
		p.freeSlotOnAnswer() &&
		p.saleOpen() &&
		p.soldOutFlag() &&
		p.reserve() &&
		p.noteReservation() &&
		p.replicasAcked() &&
		p.withinSaleLimit() {
		p.answer()
	}
}

// shortWait applies the sale's waitPolicy to a fresh reservation that fewer replicas acknowledged
// than it asked for. Under count it is only counted and answered RESERVED. Under release the
// hold is released before anything reaches Kafka, as after a failed hand-off, and the buyer is
// told to retry: a failover now cannot lose a reservation its buyer was told about. A replay is
// never waited on again: its key survives only where the WAIT was met or the release failed
// (then the orphan sweeper hands the hold off), and its hand-off makes it as durable as Kafka.
func (s *Server) shortWait(ctx context.Context, sl sale.Sale, req purchaseRequest, user string, rv stock.Reservation) error {
	if !sl.ReleasesShortWaits() {
		s.metrics.waitShort.WithLabelValues(sale.WaitPolicyCount).Inc()
		return nil
	}
	s.metrics.waitShort.WithLabelValues(sale.WaitPolicyRelease).Inc()
	s.log.Warn("reservation not acknowledged by enough Redis replicas; releasing it", "order", rv.OrderID,
		"replicas", max(rv.Replicas, 0), "want", sl.WaitReplicas)
	if !s.dropReservation(ctx, req, user, rv, "wait_short") {
		// The buyer's retry replayed it meanwhile and was told RESERVED: the order stands.
		return outcome.Errorf(outcome.Unavailable, "the order is held but this attempt could not confirm it; retry with the same Idempotency-Key")
	}
	return outcome.Errorf(outcome.Unavailable, "the reservation was not copied to %d Redis replica(s) in time and was released: nothing was reserved; retry with the same Idempotency-Key", sl.WaitReplicas)
}

// answerReservation turns the reserve script's answer into the HTTP answer; a fresh reservation
// is handed to Kafka first.
func (s *Server) answerReservation(ctx context.Context, w http.ResponseWriter, r *http.Request, req purchaseRequest, user string, rv stock.Reservation) {
	if rv.Outcome != outcome.Reserved {
		s.writeOutcome(w, r, rv.Outcome, req)
		return
	}
	if !rv.Replay {
		if err := s.handOff(ctx, req, user, rv); err != nil {
			s.countAndWriteError(w, r, err)
			return
		}
	} else if err := s.handOffAgain(ctx, req, user, rv); err != nil {
		s.countAndWriteError(w, r, err)
		return
	}
	s.metrics.outcomes.WithLabelValues(string(outcome.Reserved)).Inc()
	s.traceOutcome(r, outcome.Reserved, nil)
	writeJSON(w, http.StatusAccepted, reservedBody{OrderID: rv.OrderID.String(), Status: "PENDING", ExpiresAt: rv.ExpiresAt})
}

// saleItem finds the sale and item of a purchase in the read model; the sale's schedule, shard
// counts and replica waits come from there, never from a per-request database query.
func (s *Server) saleItem(ctx context.Context, saleID, itemID string) (sale.Sale, sale.Item, error) {
	// The definition alone: a purchase reads no stock numbers, so not catalog.get, which lays the
	// read model's numbers over the entry (a new map on every call).
	e, err := s.catalog.load(ctx, saleID)
	if err != nil {
		if outcome.CodeOf(err) == outcome.NotFound {
			return sale.Sale{}, sale.Item{}, outcome.Errorf(outcome.NotFound, "no sale %s", saleID)
		}
		s.log.Error("load sale", "sale", saleID, "err", err)
		return sale.Sale{}, sale.Item{}, outcome.Errorf(outcome.Unavailable, "sale data unavailable; nothing was reserved; retry")
	}
	it, ok := e.sale.Item(itemID)
	if !ok {
		return sale.Sale{}, sale.Item{}, outcome.Errorf(outcome.NotFound, "sale %s has no item %s", saleID, itemID)
	}
	return e.sale, it, nil
}

// handOff makes a fresh reservation durable: OrderPlaced to Kafka with acks=all (the order's
// reference for lookups was written with the hold). On failure the hold is released at once and
// its idempotency record forgotten, so the buyer's retry with the same key is a fresh attempt, never a false "reserved".
func (s *Server) handOff(ctx context.Context, req purchaseRequest, user string, rv stock.Reservation) error {
	s.crash.reserved() // a game day's fault; a no-op unless armed (fault.go)
	err := s.publish(ctx, req, user, rv, s.now().UTC())
	if err == nil {
		return s.confirm(ctx, req, rv)
	}
	s.log.Error("order hand-off failed; releasing the hold", "order", rv.OrderID, "err", err)
	if !s.dropReservation(ctx, req, user, rv, "publish_failed") {
		// Not released: a concurrent attempt handed the order off and confirmed it. The retry
		// replays that reservation.
		return outcome.Errorf(outcome.PipelineDown, "the order is held but this attempt could not record it; retry with the same Idempotency-Key")
	}
	return outcome.Errorf(outcome.PipelineDown, "the order could not be recorded; nothing was reserved; retry with the same Idempotency-Key")
}

// dropReservation releases the hold of a fresh reservation whose buyer will not hear RESERVED
// (reason: why, as fsctl_holds_released_total counts it) and forgets its idempotency record, so
// the buyer's retry with the same key is a fresh attempt. It reports false only when the hold was
// kept because the buyer's retry replayed this reservation meanwhile, handed it off again and was
// told RESERVED (confirm): then the order stands. A release that fails is left to the orphan
// sweeper and reported as done: nothing this attempt could still do would change the answer.
func (s *Server) dropReservation(ctx context.Context, req purchaseRequest, user string, rv stock.Reservation, reason string) bool {
	// The request context may be the thing that failed; the release must still happen.
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	released, err := s.stock.Release(rctx, stock.Release{
		SaleID: req.SaleID, ItemID: req.ItemID, Shard: rv.Shard, Shards: rv.Shards, OrderID: rv.OrderID, Status: "FAILED",
		ForgetUser: user, ForgetKey: req.IdemKey, UnlessHanded: true,
	})
	switch {
	case err != nil:
		s.log.Error("release failed; the orphan sweeper must return this unit", "order", rv.OrderID, "reason", reason, "err", err)
	case released:
		s.metrics.released.WithLabelValues(reason).Inc()
	default:
		return false
	}
	return true
}

// publish hands one reservation's OrderPlaced to Kafka (acks=all) within the publish timeout.
func (s *Server) publish(ctx context.Context, req purchaseRequest, user string, rv stock.Reservation, created time.Time) error {
	pctx, cancel := context.WithTimeout(ctx, s.cfg.PublishTimeout)
	defer cancel()
	start := time.Now()
	pctx, span := tracing.Child(pctx, s.tracer, "publish OrderPlaced", trace.SpanKindProducer)
	if span.IsRecording() {
		span.SetAttributes(attribute.String("messaging.system", "kafka"), attribute.String("messaging.operation.type", "send"),
			attrOrder.String(rv.OrderID.String()))
	}
	err := s.pub.PublishOrderPlaced(pctx, events.OrderPlaced{
		OrderID: rv.OrderID, SaleID: req.SaleID, ItemID: req.ItemID, UserID: user, Slot: rv.Slot,
		Shard: rv.Shard, Shards: rv.Shards, CreatedAt: created, ExpiresAt: rv.ExpiresAt, IdemKey: req.IdemKey,
		Epoch: rv.Epoch, SaleSlot: events.ClaimSlot(rv.Claimed, rv.SaleSlot),
	})
	s.metrics.publish.Observe(time.Since(start).Seconds())
	tracing.Fail(span, err)
	span.End()
	return err
}

// handOffAgain makes a replayed RESERVED as durable as a fresh one before it is answered: the first
// request may have died between the script and its hand-off, and then only Redis knows the order,
// which a Redis that loses its data before the orphan sweeper runs would take with it. The hand-off
// is repeated (the consumer records an order once, and drops an OrderPlaced whose hold already
// ended). When it fails the hold stays, since the first hand-off may have succeeded: the buyer is
// told to retry with the same key, and the sweeper re-publishes the hold meanwhile.
func (s *Server) handOffAgain(ctx context.Context, req purchaseRequest, user string, rv stock.Reservation) error {
	sec, nsec := rv.OrderID.Time().UnixTime()
	if err := s.publish(ctx, req, user, rv, time.Unix(sec, nsec).UTC()); err != nil {
		s.log.Error("hand-off of a replayed reservation failed; the hold stays", "order", rv.OrderID, "err", err)
		return outcome.Errorf(outcome.PipelineDown, "the order is held but could not be confirmed as recorded; retry with the same Idempotency-Key")
	}
	s.metrics.replayHandOffs.Inc()
	return s.confirm(ctx, req, rv)
}

// confirm is the last step of a hand-off, checked after Kafka acknowledged it and before the buyer
// hears RESERVED (lua/confirm.lua): the order must still be live on the shard state it was reserved
// on. A rebuild of Redis wipes that state, records the order log up to where it then stands, bumps
// the epoch and reloads; an OrderPlaced that reached the log before this check was there before the
// wipe, so the rebuild counts it. And a concurrent attempt of the same purchase (the buyer's retry
// while this hand-off hung) whose own hand-off failed may have released the order. In either case
// PostgreSQL drops the event (stale), so the buyer is told to retry, which the current state
// answers afresh. Confirmed, the order is marked handed off, and that failed attempt's release
// leaves it alone.
func (s *Server) confirm(ctx context.Context, req purchaseRequest, rv stock.Reservation) error {
	cctx, span := tracing.Child(ctx, s.tracer, "confirm", trace.SpanKindClient)
	ok, err := s.stock.Confirm(cctx, req.SaleID, req.ItemID, rv.Shard, rv.Shards, rv.OrderID, rv.Epoch)
	if span.IsRecording() {
		span.SetAttributes(attribute.String("db.system.name", "redis"), attribute.Bool("fsctl.confirmed", ok))
		tracing.Fail(span, err)
	}
	span.End()
	if err == nil && ok {
		return nil
	}
	s.metrics.unconfirmed.Inc()
	s.log.Warn("hand-off not confirmed: the order was released, or the item's Redis state replaced or unreachable, since the reservation",
		"order", rv.OrderID, "epoch", rv.Epoch, "err", err)
	return outcome.Errorf(outcome.Unavailable, "the order could not be confirmed (the item's stock was being restored, or a concurrent attempt released it); retry with the same Idempotency-Key")
}

func (s *Server) countAndWriteError(w http.ResponseWriter, r *http.Request, err error) {
	s.metrics.outcomes.WithLabelValues(string(outcome.CodeOf(err))).Inc()
	s.writeError(w, r, err)
}

// writeOutcome counts and answers a purchase that ends without a reservation (SOLD_OUT,
// ALREADY_PURCHASED, NOT_STARTED, ...), with the message of its code.
func (s *Server) writeOutcome(w http.ResponseWriter, r *http.Request, code outcome.Code, req purchaseRequest) {
	s.answerOutcome(w, r, code, outcomeMessage(code, req))
}

// answerOutcome is writeOutcome with a message of the caller's own.
func (s *Server) answerOutcome(w http.ResponseWriter, r *http.Request, code outcome.Code, msg string) {
	s.traceOutcome(r, code, nil)
	s.metrics.outcomes.WithLabelValues(string(code)).Inc()
	s.writeCode(w, code, msg)
}

func outcomeMessage(c outcome.Code, req purchaseRequest) string {
	switch c {
	case outcome.SoldOut:
		return "item " + req.ItemID + " is sold out"
	case outcome.AlreadyPurchased:
		return "you already hold the most units of item " + req.ItemID + " this sale allows"
	case outcome.NotStarted:
		return "sale " + req.SaleID + " has not opened yet"
	case outcome.SaleEnded:
		return "sale " + req.SaleID + " has ended"
	case outcome.Paused:
		return "sale " + req.SaleID + " is paused; retry later"
	}
	return string(c)
}
