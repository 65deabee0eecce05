package reservation_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/fsctl/fsctl/internal/checkout/reservation"
	"github.com/fsctl/fsctl/internal/contract/outcome"
)

func TestGRPCCodes(t *testing.T) {
	want := map[outcome.Code]codes.Code{
		outcome.InvalidRequest: codes.InvalidArgument, outcome.NotFound: codes.NotFound,
		outcome.AlreadyPurchased: codes.AlreadyExists, outcome.SoldOut: codes.FailedPrecondition,
		outcome.Paused: codes.FailedPrecondition, outcome.RateLimited: codes.ResourceExhausted,
		outcome.Unavailable: codes.Unavailable, outcome.Internal: codes.Internal,
	}
	for c, g := range want {
		if got := reservation.GRPCCode(c); got != g {
			t.Errorf("%s -> %s, want %s", c, got, g)
		}
	}
	for _, c := range allCodes {
		if reservation.GRPCCode(c) == codes.OK {
			t.Errorf("%s -> OK: the error would arrive as a success", c)
		}
	}
}

// TestTransportErrors: errors without an outcome come back as the kind of error the in-process
// store returns, so the API's error mapping answers the same.
func TestTransportErrors(t *testing.T) {
	for _, tc := range []struct {
		name  string
		err   error
		grpc  codes.Code
		check func(error) bool
	}{
		{"redis unreachable", &net.OpError{Op: "dial", Net: "tcp", Err: errors.New("connection refused")}, codes.Unavailable,
			func(err error) bool { var ne net.Error; return errors.As(err, &ne) }},
		{"deadline", fmt.Errorf("reserve: %w", context.DeadlineExceeded), codes.DeadlineExceeded,
			func(err error) bool { return errors.Is(err, context.DeadlineExceeded) }},
		{"cancelled", context.Canceled, codes.Canceled, func(err error) bool { return errors.Is(err, context.Canceled) }},
		{"script bug", errors.New("reserve script answered 3 fields, want 6"), codes.Internal,
			func(err error) bool { return outcome.CodeOf(err) == outcome.Internal }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := reservation.ToStatus(tc.err)
			if got := status.Code(st); got != tc.grpc {
				t.Fatalf("gRPC code %s, want %s", got, tc.grpc)
			}
			if back := reservation.FromStatus(st); !tc.check(back) || outcome.CodeOf(back) != outcome.Internal {
				t.Fatalf("came back as %T %v", back, back)
			}
		})
	}
}
