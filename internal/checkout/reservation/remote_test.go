package reservation_test

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/google/uuid"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health"
	"google.golang.org/grpc/status"

	"github.com/fsctl/fsctl/internal/checkout/reservation"
	"github.com/fsctl/fsctl/internal/checkout/reservation/reservationpb"
	"github.com/fsctl/fsctl/internal/checkout/stock"
	"github.com/fsctl/fsctl/internal/contract/outcome"
	"github.com/fsctl/fsctl/internal/contract/sale"
	"github.com/fsctl/fsctl/server"
)

// The client stands in for the in-process store wherever the API uses one.
var (
	_ server.Reserver   = (*reservation.Client)(nil)
	_ reservation.Store = (*stock.Store)(nil)
)

// serve runs a reservation service over store on a loopback port and returns a client of it.
func serve(t testing.TB, store reservation.Store) (*reservation.Client, *health.Server) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	gs := grpc.NewServer()
	hs := health.NewServer()
	reservation.Register(gs, store, hs)
	go func() { _ = gs.Serve(ln) }()
	t.Cleanup(gs.Stop)
	c, err := reservation.Dial(ln.Addr().String(), reservation.Security{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c, hs
}

// scripted answers every call with err, and Reserve waits for its context first when block is set.
type scripted struct {
	reservation.Store
	err   error
	block bool
	seen  chan error
}

func (s *scripted) Reserve(ctx context.Context, r stock.Request) (stock.Reservation, error) {
	if s.block {
		<-ctx.Done()
		s.seen <- ctx.Err()
		return stock.Reservation{}, ctx.Err()
	}
	return stock.Reservation{}, s.err
}

func (s *scripted) Release(context.Context, stock.Release) (bool, error) { return false, s.err }

func (s *scripted) Remaining(context.Context, []stock.ItemRef) ([]int64, error) { return nil, s.err }

func (s *scripted) LookupOrder(context.Context, uuid.UUID) (stock.OrderState, bool, error) {
	return stock.OrderState{}, false, s.err
}

func (s *scripted) SetPaused(context.Context, sale.Sale, bool) error { return s.err }

// TestErrorsRoundTrip: every outcome code a store's error carries reaches the client as the same
// code and message, over a real gRPC connection and for every kind of call.
func TestErrorsRoundTrip(t *testing.T) {
	st := &scripted{}
	c, _ := serve(t, st)
	ctx := context.Background()
	id := uuid.Must(uuid.NewV7())
	calls := map[string]func() error{
		"Reserve": func() error {
			_, err := c.Reserve(ctx, stock.Request{SaleID: "s", ItemID: "i", UserID: "u", IdemKey: "k", OrderID: id})
			return err
		},
		"Release":           func() error { _, err := c.Release(ctx, stock.Release{OrderID: id}); return err },
		"GetRemainingStock": func() error { _, err := c.Remaining(ctx, []stock.ItemRef{{SaleID: "s", ItemID: "i"}}); return err },
		"LookupOrder":       func() error { _, _, err := c.LookupOrder(ctx, id); return err },
		"SetPaused":         func() error { return c.SetPaused(ctx, sale.Sale{ID: "s"}, true) },
	}
	for _, code := range allCodes {
		msg := "the " + string(code) + " sentence"
		st.err = outcome.Errorf(code, "%s", msg)
		for name, call := range calls {
			err := call()
			if got := outcome.CodeOf(err); got != code {
				t.Errorf("%s with %s: came back as %s (%v)", name, code, got, err)
			}
			if got := outcome.MessageOf(err); got != msg {
				t.Errorf("%s with %s: message %q, want %q", name, code, got, msg)
			}
			if outcome.HTTPStatus(outcome.CodeOf(err)) != outcome.HTTPStatus(code) {
				t.Errorf("%s with %s: a different HTTP answer", name, code)
			}
		}
	}
}

// allCodes is every outcome code package outcome defines.
var allCodes = []outcome.Code{
	outcome.Reserved, outcome.SoldOut, outcome.AlreadyPurchased, outcome.NotStarted, outcome.Paused,
	outcome.NotAdmitted, outcome.RateLimited, outcome.InvalidRequest, outcome.Unauthorized, outcome.NotFound,
	outcome.MethodNotAllowed, outcome.BodyTooLarge, outcome.Unprocessable, outcome.Unavailable, outcome.Overloaded,
	outcome.PipelineDown, outcome.Internal, outcome.SaleEnded, outcome.Disabled, outcome.Forbidden, outcome.Paid,
	outcome.Cancelled, outcome.Expired, outcome.PaymentDeclined, outcome.PaymentUnavailable, outcome.PaymentInProgress,
	outcome.OrderClosed, outcome.OrderPending,
}

// TestBadOrderIDIsInvalidRequest: the service checks what it parses, and says so in the one
// vocabulary.
func TestBadOrderIDIsInvalidRequest(t *testing.T) {
	c, _ := serve(t, &scripted{})
	conn, err := grpc.NewClient(c.Target(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_, err = reservationpb.NewReservationServiceClient(conn).Release(context.Background(), &reservationpb.ReleaseRequest{OrderId: "not-a-uuid"})
	if status.Code(err) != codes.InvalidArgument || outcome.CodeOf(reservation.FromStatus(err)) != outcome.InvalidRequest {
		t.Fatalf("got %v, want InvalidArgument carrying INVALID_REQUEST", err)
	}
}

// TestDeadlineReachesTheService: a client deadline cancels the service's work on it.
func TestDeadlineReachesTheService(t *testing.T) {
	st := &scripted{block: true, seen: make(chan error, 1)}
	c, _ := serve(t, st)
	ctx, cancel := context.WithTimeout(context.Background(), 150*time.Millisecond)
	defer cancel()
	got := make(chan error, 1)
	go func() {
		_, err := c.Reserve(ctx, stock.Request{SaleID: "s", ItemID: "i", UserID: "u", IdemKey: "k", OrderID: uuid.Must(uuid.NewV7())})
		got <- err
	}()
	select {
	case seen := <-st.seen:
		if seen == nil {
			t.Fatal("the service's context ended without an error")
		}
	case <-time.After(3 * time.Second):
		t.Fatal("the service never saw the client's deadline: its Reserve still runs")
	}
	select {
	case err := <-got:
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("client got %v, want a deadline exceeded", err)
		}
	case <-time.After(3 * time.Second):
		t.Fatal("the client's call outlived its deadline")
	}
}

// TestServiceUnreachableIsUnavailable: no service at the address is the API's 503 UNAVAILABLE
// (a network error, as a Redis that is down is in-process).
func TestServiceUnreachableIsUnavailable(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	c, err := reservation.Dial(addr, reservation.Security{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_, err = c.Remaining(ctx, []stock.ItemRef{{SaleID: "s", ItemID: "i"}})
	var ne net.Error
	if !errors.As(err, &ne) {
		t.Fatalf("got %T %v, want a net.Error", err, err)
	}
	if err := c.Check(ctx); err == nil {
		t.Fatal("health check of nothing passed")
	}
}
