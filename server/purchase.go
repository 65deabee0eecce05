package server

import (
	"context"
	"net/http"
	"time"

	"github.com/fsctl/fsctl/events"
	"github.com/fsctl/fsctl/outcome"
	"github.com/fsctl/fsctl/stock"
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
func (s *Server) handlePurchase(w http.ResponseWriter, r *http.Request) {
	user, err := s.auth.UserFromHeader(r.Header.Get("Authorization"))
	if err != nil {
		s.countAndWriteError(w, r, err)
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, MaxPurchaseBody+1)
	req, err := parsePurchase(r.PathValue("sale"), r.PathValue("item"), r.Header.Get("Idempotency-Key"), r.Body)
	if err != nil {
		s.countAndWriteError(w, r, err)
		return
	}
	orderID, err := s.newID()
	if err != nil {
		s.countAndWriteError(w, r, err)
		return
	}
	// A buyer who hangs up must not cut the path between the reserve and the hand-off: that
	// would leave a hold with no order. From here on the request runs to its end on its own clock.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), s.cfg.PublishTimeout+reserveBudget)
	defer cancel()
	start := time.Now()
	rv, err := s.stock.Reserve(ctx, stock.Request{
		SaleID: req.SaleID, ItemID: req.ItemID, UserID: user, IdemKey: req.IdemKey, OrderID: orderID,
	})
	s.metrics.reserve.Observe(time.Since(start).Seconds())
	if err != nil {
		if outcome.CodeOf(err) == outcome.Internal {
			s.log.Error("reserve failed", "sale", req.SaleID, "item", req.ItemID, "err", err)
			err = outcome.Errorf(outcome.Unavailable, "stock store unavailable; nothing was reserved; retry with the same Idempotency-Key")
		}
		s.countAndWriteError(w, r, err)
		return
	}
	if rv.Outcome != outcome.Reserved {
		s.metrics.outcomes.WithLabelValues(string(rv.Outcome)).Inc()
		s.writeCode(w, rv.Outcome, outcomeMessage(rv.Outcome, req))
		return
	}
	if !rv.Replay {
		if err := s.handOff(ctx, req, user, rv); err != nil {
			s.countAndWriteError(w, r, err)
			return
		}
	} else if err := s.stock.SetOrderRef(ctx, rv.OrderID, req.SaleID, req.ItemID, user); err != nil {
		// The first request wrote the reference; this only repairs it, so a failure is not fatal.
		s.log.Warn("refresh order reference", "order", rv.OrderID, "err", err)
	}
	s.metrics.outcomes.WithLabelValues(string(outcome.Reserved)).Inc()
	writeJSON(w, http.StatusAccepted, reservedBody{OrderID: rv.OrderID.String(), Status: "PENDING", ExpiresAt: rv.ExpiresAt})
}

// handOff makes a fresh reservation durable: the order reference for lookups, then OrderPlaced to
// Kafka with acks=all. On failure the hold is released at once and its idempotency record
// forgotten, so the buyer's retry with the same key is a fresh attempt, never a false "reserved".
func (s *Server) handOff(ctx context.Context, req purchaseRequest, user string, rv stock.Reservation) error {
	err := s.stock.SetOrderRef(ctx, rv.OrderID, req.SaleID, req.ItemID, user)
	if err == nil {
		pctx, cancel := context.WithTimeout(ctx, s.cfg.PublishTimeout)
		start := time.Now()
		err = s.pub.PublishOrderPlaced(pctx, events.OrderPlaced{
			OrderID: rv.OrderID, SaleID: req.SaleID, ItemID: req.ItemID, UserID: user, Slot: rv.Slot,
			CreatedAt: s.now().UTC(), ExpiresAt: rv.ExpiresAt,
		})
		s.metrics.publish.Observe(time.Since(start).Seconds())
		cancel()
	}
	if err == nil {
		return nil
	}
	s.log.Error("order hand-off failed; releasing the hold", "order", rv.OrderID, "err", err)
	// The request context may be the thing that failed; the release must still happen.
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	released, rerr := s.stock.Release(rctx, stock.Release{
		SaleID: req.SaleID, ItemID: req.ItemID, OrderID: rv.OrderID, Status: "FAILED",
		ForgetUser: user, ForgetKey: req.IdemKey,
	})
	if rerr != nil {
		s.log.Error("release after failed hand-off failed; the orphan sweeper must return this unit", "order", rv.OrderID, "err", rerr)
	} else if released {
		s.metrics.released.WithLabelValues("publish_failed").Inc()
	}
	return outcome.Errorf(outcome.PipelineDown, "the order could not be recorded; nothing was reserved; retry with the same Idempotency-Key")
}

func (s *Server) countAndWriteError(w http.ResponseWriter, r *http.Request, err error) {
	s.metrics.outcomes.WithLabelValues(string(outcome.CodeOf(err))).Inc()
	s.writeError(w, r, err)
}

func outcomeMessage(c outcome.Code, req purchaseRequest) string {
	switch c {
	case outcome.SoldOut:
		return "item " + req.ItemID + " is sold out"
	case outcome.AlreadyPurchased:
		return "you already hold the most units of item " + req.ItemID + " this sale allows"
	case outcome.NotStarted:
		return "sale " + req.SaleID + " has not opened yet"
	case outcome.Paused:
		return "sale " + req.SaleID + " is paused; retry later"
	}
	return string(c)
}
