package reservation_test

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/fsctl/fsctl/internal/checkout/reservation"
	"github.com/fsctl/fsctl/internal/checkout/stock"
	"github.com/fsctl/fsctl/internal/harness/testenv"
)

// serveSecured runs the service with sec's TLS and token over a store that answers every read,
// serving, and returns its address.
func serveSecured(t *testing.T, sec reservation.Security) string {
	t.Helper()
	opts, err := sec.ServerOptions()
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	gs := grpc.NewServer(opts...)
	hs := health.NewServer()
	reservation.Register(gs, &stocked{}, hs)
	hs.SetServingStatus(reservation.ServiceName, healthpb.HealthCheckResponse_SERVING)
	go func() { _ = gs.Serve(ln) }()
	t.Cleanup(gs.Stop)
	return ln.Addr().String()
}

// stocked answers every stock read with zeros.
type stocked struct{ scripted }

func (*stocked) Remaining(_ context.Context, refs []stock.ItemRef) ([]int64, error) {
	return make([]int64, len(refs)), nil
}

func dial(t *testing.T, addr string, sec reservation.Security) *reservation.Client {
	t.Helper()
	c, err := reservation.Dial(addr, sec)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// TestTLSAndToken: with TLS and a token, only a client that verifies the certificate and sends
// the token is served; the health service answers without the token (probes carry none), but the
// client's readiness check still fails on a wrong one.
func TestTLSAndToken(t *testing.T) {
	ca := testenv.NewCA(t, "reservation test CA")
	cert, key := ca.Server(t, "reservation", "127.0.0.1")
	addr := serveSecured(t, reservation.Security{CertFile: cert, KeyFile: key, Token: "s3cret"})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	refs := []stock.ItemRef{{SaleID: "s", ItemID: "i"}}

	good := dial(t, addr, reservation.Security{CAFile: ca.File, Token: "s3cret"})
	if _, err := good.Remaining(ctx, refs); err != nil {
		t.Fatalf("client with the CA and the token: %v", err)
	}
	if err := good.Check(ctx); err != nil {
		t.Fatalf("readiness with the CA and the token: %v", err)
	}

	for name, sec := range map[string]reservation.Security{
		"no token":    {CAFile: ca.File},
		"wrong token": {CAFile: ca.File, Token: "guess"},
	} {
		c := dial(t, addr, sec)
		if _, err := c.Remaining(ctx, refs); err == nil || !strings.Contains(err.Error(), "token") {
			t.Errorf("%s: read %v, want a refusal that names the token", name, err)
		}
		if err := c.Check(ctx); err == nil || !strings.Contains(err.Error(), "token") {
			t.Errorf("%s: readiness %v, want a failure that names the token", name, err)
		}
	}

	// A probe without the token (but over TLS) is answered.
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(credentials.NewClientTLSFromCert(ca.Pool(), "")))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	res, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{Service: reservation.ServiceName})
	if err != nil || res.GetStatus() != healthpb.HealthCheckResponse_SERVING {
		t.Fatalf("health without a token: %v, %v; want SERVING", res, err)
	}

	// Plaintext to a TLS port, and TLS that trusts another CA, get nothing.
	other := testenv.NewCA(t, "another CA").File
	for name, sec := range map[string]reservation.Security{
		"plaintext":    {Token: "s3cret"},
		"another CA":   {CAFile: other, Token: "s3cret"},
		"system roots": {TLS: true, Token: "s3cret"},
	} {
		c := dial(t, addr, sec)
		short, cancel := context.WithTimeout(ctx, time.Second)
		if _, err := c.Remaining(short, refs); err == nil {
			t.Errorf("%s: a read went through", name)
		}
		cancel()
	}
}

// TestSecurityRefusesHalfConfigs: a certificate without its key, a key without its certificate,
// a CA file that is missing or holds no certificate are errors that say what is wrong, before
// anything listens or dials.
func TestSecurityRefusesHalfConfigs(t *testing.T) {
	cert, key := testenv.NewCA(t, "reservation test CA").Server(t, "reservation", "127.0.0.1")
	for _, sec := range []reservation.Security{{CertFile: cert}, {KeyFile: key}} {
		if _, err := sec.ServerOptions(); err == nil || !strings.Contains(err.Error(), "certificate and its key") {
			t.Errorf("%+v: %v, want a refusal", sec, err)
		}
	}
	if _, err := (reservation.Security{CertFile: cert, KeyFile: cert}).ServerOptions(); err == nil {
		t.Error("a certificate as its own key was accepted")
	}
	notPEM := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(notPEM, []byte("not a certificate"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, ca := range []string{filepath.Join(t.TempDir(), "missing.pem"), notPEM} {
		if _, err := reservation.Dial("127.0.0.1:1", reservation.Security{CAFile: ca}); err == nil || !strings.Contains(err.Error(), "CA") {
			t.Errorf("CA %s: %v, want a refusal", ca, err)
		}
	}
}
