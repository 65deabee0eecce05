// Package outcome is fsctl's one error vocabulary: the stable machine codes a purchase can end with
// (SOLD_OUT, ALREADY_PURCHASED, ...) and the single place they are mapped to HTTP statuses.
package outcome

import (
	"errors"
	"fmt"
	"net/http"
)

// Code is a stable machine-readable outcome, sent to clients as the "error" field of a JSON body.
type Code string

// Outcomes of the purchase path and of the other endpoints, as docs/design.md names them.
const (
	Reserved         Code = "RESERVED"
	SoldOut          Code = "SOLD_OUT"
	AlreadyPurchased Code = "ALREADY_PURCHASED"
	NotStarted       Code = "NOT_STARTED"
	Paused           Code = "PAUSED"
	NotAdmitted      Code = "NOT_ADMITTED"
	RateLimited      Code = "RATE_LIMITED"
	InvalidRequest   Code = "INVALID_REQUEST"
	Unauthorized     Code = "UNAUTHORIZED"
	NotFound         Code = "NOT_FOUND"
	MethodNotAllowed Code = "METHOD_NOT_ALLOWED"
	BodyTooLarge     Code = "BODY_TOO_LARGE"
	Unprocessable    Code = "UNPROCESSABLE"
	Unavailable      Code = "UNAVAILABLE"
	// Overloaded: the server is at its connection limit (--max-conns) and answered without
	// looking at the request.
	Overloaded   Code = "OVERLOADED"
	PipelineDown Code = "ORDER_PIPELINE_UNAVAILABLE"
	Internal     Code = "INTERNAL"

	// SaleEnded: the sale's closesAt has passed.
	SaleEnded Code = "SALE_ENDED"
	// Disabled: an operator kill switch turned this action off.
	Disabled Code = "DISABLED"
	// Forbidden: the caller is known but may not do this (e.g. the admin API without its token).
	Forbidden Code = "FORBIDDEN"

	// Order lifecycle answers.
	Paid               Code = "PAID"
	Cancelled          Code = "CANCELLED"
	Expired            Code = "EXPIRED"
	PaymentDeclined    Code = "PAYMENT_DECLINED"
	PaymentUnavailable Code = "PAYMENT_UNAVAILABLE"
	PaymentInProgress  Code = "PAYMENT_IN_PROGRESS"
	OrderClosed        Code = "ORDER_CLOSED"
	OrderPending       Code = "ORDER_NOT_RECORDED_YET"
)

// Error is a domain error: a code plus a sentence a human can act on.
type Error struct {
	Code    Code
	Message string
}

func (e *Error) Error() string { return string(e.Code) + ": " + e.Message }

// Errorf builds an *Error with a formatted message.
func Errorf(code Code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// CodeOf returns the code of the first *Error in err's chain, or Internal.
func CodeOf(err error) Code {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return Internal
}

// MessageOf returns the human message of the first *Error in err's chain; for any other error it
// returns a generic sentence so internal details never reach a client.
func MessageOf(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Message
	}
	return "internal error"
}

// HTTPStatus maps a code to the status the reference server answers with. This is the only place
// the mapping lives.
func HTTPStatus(c Code) int {
	switch c {
	case Reserved:
		return http.StatusAccepted
	case Paid, Cancelled:
		return http.StatusOK
	case SoldOut, SaleEnded, Expired:
		return http.StatusGone
	case PaymentDeclined:
		return http.StatusPaymentRequired
	case PaymentInProgress, OrderClosed:
		return http.StatusConflict
	case Forbidden:
		return http.StatusForbidden
	case AlreadyPurchased:
		return http.StatusConflict
	case NotStarted:
		return http.StatusTooEarly
	case NotAdmitted, RateLimited:
		return http.StatusTooManyRequests
	case Paused, Unavailable, Overloaded, PipelineDown, Disabled, PaymentUnavailable, OrderPending:
		return http.StatusServiceUnavailable
	case InvalidRequest:
		return http.StatusBadRequest
	case Unauthorized:
		return http.StatusUnauthorized
	case NotFound:
		return http.StatusNotFound
	case MethodNotAllowed:
		return http.StatusMethodNotAllowed
	case BodyTooLarge:
		return http.StatusRequestEntityTooLarge
	case Unprocessable:
		return http.StatusUnprocessableEntity
	default:
		return http.StatusInternalServerError
	}
}
