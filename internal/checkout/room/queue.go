package room

import (
	"context"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"strconv"
	"time"

	"github.com/fsctl/fsctl/internal/contract/outcome"
	"github.com/fsctl/fsctl/internal/contract/roomwire"
	"github.com/fsctl/fsctl/internal/contract/sale"
)

// Status is where a ticket stands (the protocol's, package roomwire).
type Status = roomwire.Status

// Ticket statuses, as Join and Poll report them.
const (
	StatusPrequeue = roomwire.StatusPrequeue
	StatusWaiting  = roomwire.StatusWaiting
	StatusAdmitted = roomwire.StatusAdmitted
	StatusExpired  = roomwire.StatusExpired
)

// Ticket is a buyer's place in a sale's waiting room.
type Ticket struct {
	ID, UserID string
	Status     Status
	// Position is the 1-based place in the queue while waiting; 0 otherwise.
	Position int64
	// Ahead is how many people are ahead while waiting.
	Ahead int64
	// Depth is the queue's length, stale waiters not yet dropped included.
	Depth int64
	// LeaseExpires, while admitted, is when the slot lapses unless polled again.
	LeaseExpires time.Time
	// EstimatedWait, while waiting, is Ahead / admission rate; the cap on active buyers can make the
	// real wait longer. Zero in the pre-queue, where the place is not told yet.
	EstimatedWait time.Duration
}

// Join gives the user's ticket: their existing live one (same ticket, same place; the poll refreshes
// it) or a new one at the back, or, before a random-order opening, at a random place. A sale
// without a room is an *outcome.Error with outcome.NotFound.
func (s *Store) Join(ctx context.Context, saleID, userID string) (Ticket, error) {
	if !sale.ValidUserID(userID) {
		return Ticket{}, outcome.Errorf(outcome.InvalidRequest, "user id must be 1-128 printable characters")
	}
	k := SaleKeys(saleID).all()
	for range 3 { // a fresh id collides with probability 2^-128; retrying is cheaper than reasoning
		r := s.draw(3)
		var id [16]byte
		binary.BigEndian.PutUint64(id[:8], r[0])
		binary.BigEndian.PutUint64(id[8:], r[1])
		score := strconv.FormatUint(r[2]>>(64-preQueueBits), 10)
		res, err := s.scripts.join.Run(ctx, s.rdb, k, userID, hex.EncodeToString(id[:]), score).Slice()
		if err != nil {
			return Ticket{}, fmt.Errorf("join room of sale %s: %w", saleID, err)
		}
		if len(res) == 2 && res[1] == "collision" {
			continue
		}
		return ticketFrom(res, userID, saleID)
	}
	return Ticket{}, fmt.Errorf("join room of sale %s: fresh ticket ids keep colliding; check the random source", saleID)
}

// Poll refreshes the ticket's liveness and says where it stands: a waiter's place is kept for
// another WaiterTTL, an admitted buyer's lease runs ActiveTTL from now. A waiter not seen for
// WaiterTTL, or an admitted ticket whose lease passed, is expired, even if no Tick dropped it yet. A
// ticket of another user, or an unknown or revoked one, is an *outcome.Error with outcome.NotFound.
func (s *Store) Poll(ctx context.Context, saleID, ticketID, userID string) (Ticket, error) {
	if !validTicketID(ticketID) {
		return Ticket{}, notFound(saleID)
	}
	res, err := s.scripts.poll.Run(ctx, s.rdb, SaleKeys(saleID).all(), ticketID, userID).Slice()
	if err != nil {
		return Ticket{}, fmt.Errorf("poll room of sale %s: %w", saleID, err)
	}
	return ticketFrom(res, userID, saleID)
}

func notFound(saleID string) error {
	return outcome.Errorf(outcome.NotFound, "no such ticket of yours in the waiting room of sale %s", saleID)
}

func validTicketID(id string) bool {
	if len(id) != 32 {
		return false
	}
	for i := 0; i < len(id); i++ {
		if c := id[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// ticketFrom reads common.lua's answer: ticket, status, position, depth, lease ms, rate.
func ticketFrom(res []any, userID, saleID string) (Ticket, error) {
	if len(res) != 6 && len(res) != 2 {
		return Ticket{}, fmt.Errorf("room of sale %s: unexpected script answer %v", saleID, res)
	}
	id, _ := res[0].(string)
	status, _ := res[1].(string)
	switch status {
	case "noroom":
		return Ticket{}, noRoom(saleID)
	case "notfound":
		return Ticket{}, notFound(saleID)
	}
	if len(res) != 6 {
		return Ticket{}, fmt.Errorf("room of sale %s: unexpected script answer %v", saleID, res)
	}
	position, _ := res[2].(int64)
	depth, _ := res[3].(int64)
	lease, _ := res[4].(int64)
	rateStr, _ := res[5].(string)
	t := Ticket{ID: id, UserID: userID, Status: Status(status), Position: position, Depth: depth}
	switch t.Status {
	case StatusWaiting:
		t.Ahead = position - 1
		rate, _ := strconv.ParseFloat(rateStr, 64)
		t.EstimatedWait = waitFor(t.Ahead, rate)
	case StatusAdmitted:
		t.LeaseExpires = time.UnixMilli(lease)
	}
	return t, nil
}

// TickResult is what one admission round did and left.
type TickResult struct {
	// Admitted is how many buyers this round moved from the queue into active.
	Admitted int
	// Depth and Active are the queue's length and the admitted buyers after the round.
	Depth, Active int64
	// ExpiredWaiters and ExpiredActive are the waiters and admitted buyers this round dropped
	// because they stopped polling.
	ExpiredWaiters, ExpiredActive int
}

// Tick runs one admission round. Any number of instances may call it at any frequency: the
// allowance is a token bucket refilled at the room's rate from the time since the last round, with a
// burst of at most max(1, rate), so a gap in ticking does not release a flood. A round first drops
// waiters not seen for WaiterTTL and admitted buyers whose lease ran out (so their capacity is reused
// at once), then admits min(allowance, MaxActive - active, queue length) buyers from the head of the
// queue, each with a lease of ActiveTTL; at most RoundBound of each. Before the opening or while
// paused it admits nobody and saves nothing up.
func (s *Store) Tick(ctx context.Context, saleID string) (TickResult, error) {
	res, err := s.scripts.tick.Run(ctx, s.rdb, SaleKeys(saleID).all(), RoundBound, s.tombstoneTTL.Milliseconds()).Int64Slice()
	if err != nil {
		return TickResult{}, fmt.Errorf("tick room of sale %s: %w", saleID, err)
	}
	if len(res) == 1 && res[0] == -1 {
		return TickResult{}, noRoom(saleID)
	}
	if len(res) != 5 {
		return TickResult{}, fmt.Errorf("tick room of sale %s: unexpected script answer %v", saleID, res)
	}
	return TickResult{Admitted: int(res[0]), Depth: res[1], Active: res[2], ExpiredWaiters: int(res[3]),
		ExpiredActive: int(res[4])}, nil
}

// Revoke frees an admitted buyer's slot at once (their checkout finished), or a waiter's place, and
// forgets the ticket: its next poll is NotFound and the user's next Join gets a new ticket. It
// reports whether the ticket held a slot or a place.
func (s *Store) Revoke(ctx context.Context, saleID, ticketID string) (bool, error) {
	if !validTicketID(ticketID) {
		return false, nil
	}
	n, err := s.scripts.revoke.Run(ctx, s.rdb, SaleKeys(saleID).all(), ticketID).Int()
	if err != nil {
		return false, fmt.Errorf("revoke ticket in room of sale %s: %w", saleID, err)
	}
	return n == 1, nil
}
