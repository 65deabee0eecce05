package server_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"google.golang.org/grpc"
	"google.golang.org/grpc/health"

	"github.com/fsctl/fsctl/internal/checkout/reservation"
	"github.com/fsctl/fsctl/internal/checkout/reservation/reservationpb"
	"github.com/fsctl/fsctl/internal/checkout/stock"
	"github.com/fsctl/fsctl/internal/contract/outcome"
	"github.com/fsctl/fsctl/internal/harness/testenv/eventually"
	"github.com/fsctl/fsctl/internal/platform/redisconn"
	"github.com/fsctl/fsctl/server"
)

// remoteReservations is an env's reservation service: the real store on the env's Redis, served
// over gRPC on a loopback port, counting the calls it answers.
type remoteReservations struct {
	addr  string
	calls map[string]*atomic.Int64
}

// reservationAddr starts the env's reservation service when it asks for one (envOptions.Remote)
// and returns its address; "" keeps the store in-process.
func (e *env) reservationAddr() string {
	if !e.opts.Remote {
		return ""
	}
	if e.remote != nil {
		return e.remote.addr
	}
	t := e.t
	rdb, err := redisconn.Open(e.redisURL(), redisconn.Tune{PoolSize: 256})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r := &remoteReservations{addr: ln.Addr().String(), calls: map[string]*atomic.Int64{}}
	for _, m := range reservationpb.ReservationService_ServiceDesc.Methods {
		r.calls[m.MethodName] = new(atomic.Int64)
	}
	count := func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
		if n := r.calls[info.FullMethod[strings.LastIndex(info.FullMethod, "/")+1:]]; n != nil {
			n.Add(1)
		}
		return h(ctx, req)
	}
	gs := grpc.NewServer(grpc.UnaryInterceptor(count))
	reservation.Register(gs, stock.New(rdb), health.NewServer())
	go func() { _ = gs.Serve(ln) }()
	t.Cleanup(func() {
		gs.Stop()
		_ = rdb.Close()
	})
	e.remote = r
	return r.addr
}

// TestContentionRemote is the split deployment: the API instance reserves, confirms and looks
// up through a gRPC client of a reservation service that runs the same store on the same Redis;
// the contention suite's every check holds, and every reserve crossed the wire.
func TestContentionRemote(t *testing.T) {
	t.Parallel()
	e := testContention(t, envOptions{Quantity: 100, Limit: 1, SoldOut: server.SoldOutOff, Remote: true})
	// 1,000 buyers, then a second key and two replays.
	if n := e.remote.calls["Reserve"].Load(); n < 1003 {
		t.Fatalf("the reservation service answered %d reserves, want every one of the 1,003 purchases", n)
	}
	if n := e.remote.calls["Confirm"].Load(); n < 101 {
		t.Fatalf("the reservation service confirmed %d hand-offs, want 101 (100 fresh and a replay)", n)
	}
}

// TestRemoteLookupCancelAndPause: the API's other calls on the store go through the service too:
// the lookup of an order PostgreSQL lacks, the operator's pause; and a unit a cancellation (the
// lifecycle's, on the same Redis) returned is reserved again through it.
func TestRemoteLookupCancelAndPause(t *testing.T) {
	t.Parallel()
	e := newEnvWith(t, envOptions{Quantity: 1, Limit: 1, SoldOut: server.SoldOutOff, Remote: true, AdminToken: opToken})
	code, body := e.buy("ann", "k1")
	if code != http.StatusAccepted {
		t.Fatalf("buy: %d %s", code, body)
	}
	id := orderIDOf(t, body).String()
	if code, body := e.buy("bob", "k1"); code != http.StatusGone || !strings.Contains(body, string(outcome.SoldOut)) {
		t.Fatalf("bob: %d %s, want 410 SOLD_OUT", code, body)
	}
	if code, body := e.do(http.MethodGet, "/api/v1/orders/"+uuid.Must(uuid.NewV7()).String(), "ann", nil, nil); code != http.StatusNotFound {
		t.Fatalf("GET an unknown order: %d %s, want 404", code, body)
	}
	eventually.OK(t, 10*time.Second, func() error {
		if code, body := e.do(http.MethodDelete, "/api/v1/orders/"+id, "ann", nil, nil); code != http.StatusOK {
			return fmt.Errorf("cancel: %d %s", code, body)
		}
		return nil
	})
	if code, body := e.buy("bob", "k2"); code != http.StatusAccepted {
		t.Fatalf("bob after the cancellation: %d %s, want 202", code, body)
	}
	if code, body := e.admin(e.base, http.MethodPost, "/admin/v1/sales/"+e.sale.ID+"/pause", ""); code != http.StatusOK {
		t.Fatalf("pause: %d %s", code, body)
	}
	if code, body := e.buy("cat", "k1"); code != http.StatusServiceUnavailable || !strings.Contains(body, string(outcome.Paused)) {
		t.Fatalf("cat while paused: %d %s, want 503 PAUSED", code, body)
	}
	for _, m := range []string{"Reserve", "Confirm", "LookupOrder", "SetPaused"} {
		if e.remote.calls[m].Load() == 0 {
			t.Errorf("no %s went through the reservation service", m)
		}
	}
}
