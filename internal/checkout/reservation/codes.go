package reservation

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"syscall"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/fsctl/fsctl/internal/contract/outcome"
)

// outcomeDomain is the ErrorInfo domain of a status that carries an outcome code as its reason.
const outcomeDomain = "fsctl.outcome"

// grpcCode is the gRPC code an outcome travels under; the outcome code itself travels in the
// status's ErrorInfo detail, so the client gets back exactly the code it would have had in-process.
// This is the only place the mapping lives.
func grpcCode(c outcome.Code) codes.Code {
	switch c {
	case outcome.InvalidRequest, outcome.Unprocessable, outcome.BodyTooLarge:
		return codes.InvalidArgument
	case outcome.NotFound:
		return codes.NotFound
	case outcome.AlreadyPurchased:
		return codes.AlreadyExists
	case outcome.SoldOut, outcome.NotStarted, outcome.Paused, outcome.SaleEnded, outcome.Expired,
		outcome.OrderClosed, outcome.PaymentDeclined:
		return codes.FailedPrecondition
	case outcome.PaymentInProgress:
		return codes.Aborted
	case outcome.NotAdmitted, outcome.RateLimited, outcome.Overloaded:
		return codes.ResourceExhausted
	case outcome.Unauthorized:
		return codes.Unauthenticated
	case outcome.Forbidden:
		return codes.PermissionDenied
	case outcome.MethodNotAllowed:
		return codes.Unimplemented
	case outcome.Unavailable, outcome.PipelineDown, outcome.PaymentUnavailable, outcome.OrderPending, outcome.Disabled:
		return codes.Unavailable
	case outcome.Internal:
		return codes.Internal
	default:
		// Answers that are not errors (RESERVED, PAID, CANCELLED) and codes added later: never
		// codes.OK, which would turn the error into a success.
		return codes.Unknown
	}
}

// toStatus turns an error of the store into the status the service answers with: an outcome
// error keeps its code (in an ErrorInfo detail) and message; a store that cannot be reached is
// Unavailable; a deadline or a cancellation is itself; anything else is Internal.
func toStatus(err error) error {
	if err == nil {
		return nil
	}
	var oe *outcome.Error
	switch {
	case errors.As(err, &oe):
		st := status.New(grpcCode(oe.Code), oe.Message)
		if d, derr := st.WithDetails(&errdetails.ErrorInfo{Domain: outcomeDomain, Reason: string(oe.Code)}); derr == nil {
			st = d
		}
		return st.Err()
	case errors.Is(err, context.DeadlineExceeded):
		return status.Error(codes.DeadlineExceeded, err.Error())
	case errors.Is(err, context.Canceled):
		return status.Error(codes.Canceled, err.Error())
	case unreachable(err):
		return status.Error(codes.Unavailable, err.Error())
	}
	return status.Error(codes.Internal, err.Error())
}

// unreachable reports an error that says Redis could not be reached or hung up.
func unreachable(err error) bool {
	var netErr net.Error
	return errors.As(err, &netErr) || errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)
}

// fromStatus turns a status the client got back into the error the in-process store would have
// returned: an outcome detail is that outcome again; Unavailable (the service or its Redis
// unreachable) is a network error and a deadline or a cancellation wraps the context's error, so
// the API's one error mapping (server/respond.go) answers 503 UNAVAILABLE as it does for a Redis
// that is down; anything else is an internal error with the service's message.
func fromStatus(err error) error {
	if err == nil {
		return nil
	}
	st, ok := status.FromError(err)
	if !ok {
		return err
	}
	for _, d := range st.Details() {
		if info, ok := d.(*errdetails.ErrorInfo); ok && info.GetDomain() == outcomeDomain {
			return &outcome.Error{Code: outcome.Code(info.GetReason()), Message: st.Message()}
		}
	}
	switch st.Code() {
	case codes.DeadlineExceeded:
		return fmt.Errorf("reservation service: %s: %w", st.Message(), context.DeadlineExceeded)
	case codes.Canceled:
		return fmt.Errorf("reservation service: %s: %w", st.Message(), context.Canceled)
	case codes.Unavailable:
		return &unavailableError{msg: st.Message()}
	}
	return fmt.Errorf("reservation service: %s: %s", st.Code(), st.Message())
}

// unavailableError is a reservation service, or its Redis, that could not be reached. It is a
// net.Error, as the in-process store's error for an unreachable Redis is.
type unavailableError struct{ msg string }

func (e *unavailableError) Error() string   { return "reservation service unavailable: " + e.msg }
func (e *unavailableError) Timeout() bool   { return false }
func (e *unavailableError) Temporary() bool { return true }

var _ net.Error = (*unavailableError)(nil)
