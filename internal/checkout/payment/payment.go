// Package payment charges buyers through an external payment provider: an HTTP client that keeps
// "declined", "unavailable" and "may have charged" apart, and a circuit breaker in front of it so a
// failing provider is refused fast instead of holding every checkout for its timeout.
package payment

import (
	"errors"

	"github.com/google/uuid"
)

// Charge asks the provider to take money for one order.
type Charge struct {
	// OrderID is the provider's idempotency key: charging the same order twice charges once.
	OrderID     uuid.UUID
	AmountCents int64
	Currency    string
	Token       string
}

// Status is the provider's verdict on a charge.
type Status string

// The verdicts a receipt can carry.
const (
	Succeeded Status = "succeeded"
	Declined  Status = "declined"
	Voided    Status = "voided"
)

// Receipt is the provider's answer for one idempotency key.
type Receipt struct {
	ID     string
	Status Status
	Reason string
}

var (
	// ErrUnavailable means the provider refused the charge (5xx) or could not be reached before the
	// request was sent: the charge did not happen and the order may be released.
	ErrUnavailable = errors.New("payment provider unavailable")
	// ErrUnknownOutcome means the request was sent but no answer came back (timeout, connection lost):
	// the provider may or may not have charged. Void the order id to settle it.
	ErrUnknownOutcome = errors.New("payment outcome unknown")
	// ErrBreakerOpen means the circuit breaker refused the call; nothing was sent to the provider.
	ErrBreakerOpen = errors.New("payment circuit breaker open")
)
