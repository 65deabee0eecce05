package server

import (
	"net/http"
	"time"

	"github.com/google/uuid"

	"github.com/fsctl/fsctl/internal/contract/outcome"
)

// orderBody is the answer to GET /api/v1/orders/{id}.
type orderBody struct {
	OrderID   string     `json:"orderId"`
	SaleID    string     `json:"saleId"`
	ItemID    string     `json:"itemId"`
	Status    string     `json:"status"`
	Persisted bool       `json:"persisted"`
	ExpiresAt *time.Time `json:"expiresAt,omitempty"`
}

// handleGetOrder answers from PostgreSQL when the order is there, and otherwise from the Redis
// hold (persisted:false) while the order is still in flight. Another user's order is a 404, the
// same answer as an order that does not exist, so ids cannot be probed.
func (s *Server) handleGetOrder(w http.ResponseWriter, r *http.Request) {
	user, err := s.auth.UserFromHeader(r.Header.Get("Authorization"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	id, err := uuid.Parse(r.PathValue("id"))
	if err != nil || len(r.PathValue("id")) != 36 {
		s.writeCode(w, outcome.InvalidRequest, "order id must be a UUID")
		return
	}
	notFound := outcome.Errorf(outcome.NotFound, "no order %s", id)
	o, err := s.store.GetOrder(r.Context(), id)
	switch {
	case err == nil:
		if o.UserID != user {
			s.writeError(w, r, notFound)
			return
		}
		exp := o.ExpiresAt.UTC()
		writeJSON(w, http.StatusOK, orderBody{OrderID: id.String(), SaleID: o.SaleID, ItemID: o.ItemID, Status: o.Status, Persisted: true, ExpiresAt: &exp})
		return
	case outcome.CodeOf(err) != outcome.NotFound:
		s.log.Error("get order from postgres", "order", id, "err", err)
		s.writeCode(w, outcome.Unavailable, "order store unavailable; retry")
		return
	}
	st, ok, err := s.stock.LookupOrder(r.Context(), id)
	if err != nil {
		s.log.Error("get order from redis", "order", id, "err", err)
		s.writeCode(w, outcome.Unavailable, "stock store unavailable; retry")
		return
	}
	if !ok || st.UserID != user {
		s.writeError(w, r, notFound)
		return
	}
	writeJSON(w, http.StatusOK, orderBody{OrderID: id.String(), SaleID: st.SaleID, ItemID: st.ItemID, Status: st.Status, Persisted: false})
}
