package server

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"time"

	"github.com/fsctl/fsctl/internal/checkout/room"
	"github.com/fsctl/fsctl/internal/contract/outcome"
	"github.com/fsctl/fsctl/internal/contract/sale"
)

// AdmissionHeader carries the admission token on a purchase when the sale has a waiting room.
const AdmissionHeader = "X-Admission-Token"

// Room is the waiting room's shared state; *room.Store implements it.
type Room interface {
	Configure(ctx context.Context, saleID string, r sale.Room, opensAt time.Time, revision int64) error
	Join(ctx context.Context, saleID, userID string) (room.Ticket, error)
	Poll(ctx context.Context, saleID, ticketID, userID string) (room.Ticket, error)
	Tick(ctx context.Context, saleID string) (room.TickResult, error)
	Revoke(ctx context.Context, saleID, ticketID string) (bool, error)
	Stats(ctx context.Context, saleID string) (room.Stats, error)
}

// ticketBody answers the queue endpoints.
type ticketBody struct {
	Ticket               string     `json:"ticket"`
	Status               string     `json:"status"`
	Position             int64      `json:"position,omitempty"`
	Ahead                int64      `json:"ahead"`
	Depth                int64      `json:"depth"`
	EstimatedWaitSeconds float64    `json:"estimatedWaitSeconds"`
	PollAfterSeconds     float64    `json:"pollAfterSeconds"`
	OpensAt              time.Time  `json:"opensAt"`
	SoldOut              bool       `json:"soldOut,omitempty"`
	AdmissionToken       string     `json:"admissionToken,omitempty"`
	TokenExpiresAt       *time.Time `json:"tokenExpiresAt,omitempty"`
}

// challengeBody answers GET .../queue/challenge.
type challengeBody struct {
	Challenge  string    `json:"challenge,omitempty"`
	Difficulty int       `json:"difficulty"`
	ExpiresAt  time.Time `json:"expiresAt,omitzero"`
}

// joinBody is the optional body of POST .../queue: the solved proof of work.
type joinBody struct {
	Challenge string `json:"challenge"`
	Nonce     string `json:"nonce"`
}

// roomSale authenticates the buyer, applies the queue's rate limits and finds a sale with a
// waiting room; on failure it has answered already.
func (s *Server) roomSale(w http.ResponseWriter, r *http.Request) (string, sale.Sale, bool) {
	user, err := s.auth.UserFromHeader(r.Header.Get("Authorization"))
	if err != nil {
		s.writeError(w, r, err)
		return "", sale.Sale{}, false
	}
	id := r.PathValue("sale")
	if !sale.ValidSlug(id) {
		s.writeCode(w, outcome.InvalidRequest, "sale id must match [A-Za-z0-9_-]{1,64}")
		return "", sale.Sale{}, false
	}
	e, err := s.catalog.get(r.Context(), id)
	if err != nil {
		if outcome.CodeOf(err) != outcome.NotFound {
			s.log.Error("load sale", "sale", id, "err", err)
			err = outcome.Errorf(outcome.Unavailable, "sale data unavailable; retry")
		}
		s.writeError(w, r, err)
		return "", sale.Sale{}, false
	}
	if !e.sale.Room.Enabled || s.room == nil {
		s.writeCode(w, outcome.NotFound, "sale "+id+" has no waiting room; buy directly")
		return "", sale.Sale{}, false
	}
	if !s.allowRate(w, r, e.sale, "queue", user) {
		return "", sale.Sale{}, false
	}
	return user, e.sale, true
}

func (s *Server) handleChallenge(w http.ResponseWriter, r *http.Request) {
	user, sl, ok := s.roomSale(w, r)
	if !ok {
		return
	}
	if sl.Room.PowDifficulty == 0 || s.challenges == nil {
		writeJSON(w, http.StatusOK, challengeBody{})
		return
	}
	c := s.challenges.Issue(sl.ID, user, sl.Room.PowDifficulty)
	writeJSON(w, http.StatusOK, challengeBody{Challenge: c.Value, Difficulty: c.Difficulty, ExpiresAt: c.ExpiresAt})
}

// handleJoin gives the buyer a ticket: one per buyer and sale, the same again on a re-join.
func (s *Server) handleJoin(w http.ResponseWriter, r *http.Request) {
	user, sl, ok := s.roomSale(w, r)
	if !ok {
		return
	}
	if sl.Room.PowDifficulty > 0 && s.challenges != nil {
		if err := s.checkWork(r.Body, sl, user); err != nil {
			s.writeError(w, r, err)
			return
		}
	}
	t, err := s.room.Join(r.Context(), sl.ID, user)
	if outcome.CodeOf(err) == outcome.NotFound {
		// The room's settings are not in Redis yet (a sale created after this instance's last
		// round, or a Redis that lost them): write them and let the buyer in line.
		if err = s.room.Configure(r.Context(), sl.ID, sl.Room, sl.OpensAt, sl.Revision); err == nil {
			t, err = s.room.Join(r.Context(), sl.ID, user)
		}
	}
	if err != nil {
		s.roomFailed(w, r, sl, err)
		return
	}
	s.roomUp.Store(true)
	s.writeTicket(w, r, sl, t)
}

// handlePoll says where a ticket stands and, once admitted, hands out a fresh admission token.
func (s *Server) handlePoll(w http.ResponseWriter, r *http.Request) {
	user, sl, ok := s.roomSale(w, r)
	if !ok {
		return
	}
	t, err := s.room.Poll(r.Context(), sl.ID, r.PathValue("ticket"), user)
	if err != nil {
		s.roomFailed(w, r, sl, err)
		return
	}
	s.roomUp.Store(true)
	s.writeTicket(w, r, sl, t)
}

func (s *Server) checkWork(body io.Reader, sl sale.Sale, user string) error {
	var b joinBody
	dec := json.NewDecoder(io.LimitReader(body, 1<<10))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&b); err != nil || b.Challenge == "" || b.Nonce == "" {
		return outcome.Errorf(outcome.InvalidRequest,
			`this sale asks for a proof of work: GET /api/v1/sales/%s/queue/challenge, solve it, then send {"challenge":"...","nonce":"..."}`, sl.ID)
	}
	return s.challenges.Verify(sl.ID, user, b.Challenge, b.Nonce, sl.Room.PowDifficulty)
}

func (s *Server) writeTicket(w http.ResponseWriter, r *http.Request, sl sale.Sale, t room.Ticket) {
	b := ticketBody{
		Ticket: t.ID, Status: string(t.Status), Position: t.Position, Ahead: t.Ahead, Depth: t.Depth,
		EstimatedWaitSeconds: t.EstimatedWait.Seconds(), OpensAt: sl.OpensAt.UTC(), SoldOut: s.catalog.soldOut(sl.ID),
	}
	rm := sl.Room
	switch t.Status {
	case room.StatusAdmitted:
		tok, exp, err := s.tokens.Mint(t.UserID, sl.ID, t.ID, rm.ActiveTTL)
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		b.AdmissionToken, b.TokenExpiresAt = tok, &exp
		b.PollAfterSeconds = (rm.ActiveTTL / 3).Seconds()
	case room.StatusPrequeue:
		b.PollAfterSeconds = clampDuration(time.Until(sl.OpensAt), 500*time.Millisecond, rm.WaiterTTL/3).Seconds()
	case room.StatusWaiting:
		b.PollAfterSeconds = clampDuration(t.EstimatedWait/4, time.Second, rm.WaiterTTL/3).Seconds()
	case room.StatusExpired:
		writeJSON(w, http.StatusGone, b)
		return
	}
	writeJSON(w, http.StatusOK, b)
}

// roomFailed answers a queue call whose room state could not be reached, and marks the room down
// so the purchase path follows the sale's fail mode.
func (s *Server) roomFailed(w http.ResponseWriter, r *http.Request, sl sale.Sale, err error) {
	if code := outcome.CodeOf(err); code != outcome.Internal {
		s.writeError(w, r, err)
		return
	}
	s.roomUp.Store(false)
	s.log.Error("waiting room unreachable", "sale", sl.ID, "fail_mode", sl.Room.FailMode, "err", err)
	msg := "the waiting room is unavailable; retry"
	if sl.Room.FailMode == sale.FailOpen {
		msg = "the waiting room is unavailable; this sale fails open: buy directly (rate limits apply)"
	}
	s.writeCode(w, outcome.Unavailable, msg)
}

// admission checks a purchase against the sale's waiting room: a valid admission token of this
// buyer for this sale, or — when the room is down and the sale fails open — nothing. It returns the
// ticket to revoke once the checkout is done ("" when there is none).
func (s *Server) admission(r *http.Request, sl sale.Sale, user string) (string, error) {
	if !sl.Room.Enabled || s.tokens == nil {
		return "", nil
	}
	ticket, err := s.tokens.Verify(r.Header.Get(AdmissionHeader), user, sl.ID)
	if err == nil {
		return ticket, nil
	}
	if sl.Room.FailMode == sale.FailOpen && !s.roomUp.Load() {
		s.metrics.failOpen.Inc()
		return "", nil
	}
	if r.Header.Get(AdmissionHeader) == "" {
		return "", outcome.Errorf(outcome.NotAdmitted, "sale %s has a waiting room: join it at POST /api/v1/sales/%s/queue and buy with the admission token it gives you (header %s)", sl.ID, sl.ID, AdmissionHeader)
	}
	return "", err
}

// revoke frees an admitted buyer's slot once their checkout has a final answer, so the next buyer
// in line gets it at once instead of when the lease runs out.
func (s *Server) revoke(saleID, ticket string) {
	if ticket == "" || s.room == nil {
		return
	}
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		if _, err := s.room.Revoke(ctx, saleID, ticket); err != nil && !errors.Is(err, context.Canceled) {
			s.log.Warn("revoke admission", "sale", saleID, "err", err)
		}
	}()
}

func clampDuration(d, lo, hi time.Duration) time.Duration {
	return max(lo, min(d, hi))
}
