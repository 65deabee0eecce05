package server

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"

	"github.com/google/uuid"

	"github.com/fsctl/fsctl/internal/checkout/control"
	"github.com/fsctl/fsctl/internal/checkout/lifecycle"
	"github.com/fsctl/fsctl/internal/contract/outcome"
)

// MaxPaymentToken bounds the payment token a buyer may send.
const MaxPaymentToken = 256

// payBody is the request of POST /api/v1/orders/{id}/pay.
type payBody struct {
	PaymentToken string `json:"paymentToken"`
}

// orderStatusBody answers pay and cancel.
type orderStatusBody struct {
	OrderID    string `json:"orderId"`
	Status     string `json:"status"`
	PaymentRef string `json:"paymentRef,omitempty"`
}

// handlePay charges the buyer for one of their orders through the payment saga: 200 PAID,
// 402 PAYMENT_DECLINED or 503 PAYMENT_UNAVAILABLE (both released), 410 EXPIRED, 409 when the order
// is being paid or is closed.
func (s *Server) handlePay(w http.ResponseWriter, r *http.Request) {
	user, id, ok := s.orderRequest(w, r)
	if !ok {
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, 1<<10)
	token, err := parsePay(r.Body)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if s.sw.Off(control.Payment) {
		s.writeCode(w, outcome.Disabled, "payments are switched off by the operator; your order is still held — retry later")
		return
	}
	res, err := s.life.Pay(r.Context(), lifecycle.PayRequest{OrderID: id, UserID: user, Token: token})
	if err != nil {
		s.metrics.payments.WithLabelValues(string(outcome.CodeOf(err))).Inc()
		s.writeError(w, r, err)
		return
	}
	s.metrics.payments.WithLabelValues(string(outcome.Paid)).Inc()
	writeJSON(w, http.StatusOK, orderStatusBody{OrderID: id.String(), Status: "PAID", PaymentRef: res.PaymentRef})
}

// handleCancel cancels an unpaid order; its unit goes back on sale once.
func (s *Server) handleCancel(w http.ResponseWriter, r *http.Request) {
	user, id, ok := s.orderRequest(w, r)
	if !ok {
		return
	}
	o, err := s.life.Cancel(r.Context(), id, user)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, orderStatusBody{OrderID: id.String(), Status: o.Status})
}

// orderRequest authenticates the buyer and parses the order id of /api/v1/orders/{id}...; on
// failure it has answered already.
func (s *Server) orderRequest(w http.ResponseWriter, r *http.Request) (string, uuid.UUID, bool) {
	if s.life == nil {
		s.writeCode(w, outcome.Unavailable, "this server runs without the order lifecycle (payments and cancellations)")
		return "", uuid.Nil, false
	}
	user, err := s.auth.UserFromHeader(r.Header.Get("Authorization"))
	if err != nil {
		s.writeError(w, r, err)
		return "", uuid.Nil, false
	}
	raw := r.PathValue("id")
	id, err := uuid.Parse(raw)
	if err != nil || len(raw) != 36 {
		s.writeCode(w, outcome.InvalidRequest, "order id must be a UUID")
		return "", uuid.Nil, false
	}
	return user, id, true
}

// parsePay validates a pay request body.
func parsePay(body io.Reader) (string, error) {
	var b payBody
	dec := json.NewDecoder(body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&b); err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			return "", outcome.Errorf(outcome.BodyTooLarge, "pay body is limited to 1 KiB")
		}
		return "", outcome.Errorf(outcome.InvalidRequest, `body must be JSON {"paymentToken":"..."}: %v`, err)
	}
	if dec.More() {
		return "", outcome.Errorf(outcome.InvalidRequest, "body must hold one JSON object")
	}
	if b.PaymentToken == "" || len(b.PaymentToken) > MaxPaymentToken {
		return "", outcome.Errorf(outcome.InvalidRequest, "paymentToken is required (1-%d characters)", MaxPaymentToken)
	}
	return b.PaymentToken, nil
}
