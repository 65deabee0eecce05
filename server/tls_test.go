package server_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/fsctl/fsctl/internal/harness/testenv"
	"github.com/fsctl/fsctl/internal/harness/testenv/eventually"
	"github.com/fsctl/fsctl/server"
)

// serveTLS runs a checkout with only its health routes alive (no stores: nothing here buys)
// over TLS from certFile/keyFile, and returns its address.
func serveTLS(t *testing.T, certFile, keyFile string) string {
	t.Helper()
	cfg := server.DefaultConfig()
	cfg.Addr, cfg.SoldOut, cfg.TLSCertFile, cfg.TLSKeyFile = "127.0.0.1:0", server.SoldOutOff, certFile, keyFile
	srv := server.New(cfg, server.Deps{Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	ctx, cancel := context.WithCancel(context.Background())
	addr := make(chan string, 1)
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, func(a net.Addr) { addr <- a.String() }) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
	})
	select {
	case a := <-addr:
		return a
	case err := <-done:
		t.Fatalf("serve: %v", err)
	}
	return ""
}

// servedCert does one TLS GET /healthz over a new connection, trusting roots, and returns the
// certificate the server presented and the protocol it answered with.
func servedCert(t *testing.T, addr string, roots *x509.CertPool) (*x509.Certificate, string) {
	t.Helper()
	var protocols http.Protocols
	protocols.SetHTTP1(true)
	protocols.SetHTTP2(true)
	c := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: roots}, Protocols: &protocols, DisableKeepAlives: true}}
	resp, err := c.Get("https://" + addr + "/healthz")
	if err != nil {
		t.Fatalf("GET /healthz over TLS: %v", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.TLS == nil {
		t.Fatalf("GET /healthz: %s, TLS %v", resp.Status, resp.TLS != nil)
	}
	return resp.TLS.PeerCertificates[0], resp.Proto
}

// replace writes a new pair over the served files, as a renewal tool would (certificate first).
func replace(t *testing.T, certFile, keyFile, newCert, newKey string) {
	t.Helper()
	for _, f := range [][2]string{{newCert, certFile}, {newKey, keyFile}} {
		b, err := os.ReadFile(f[0])
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(f[1], b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

// TestServeTLSReloadsTheCertificate serves a generated certificate over h2, replaces its files
// and sees the new one served within a few seconds, without a restart.
func TestServeTLSReloadsTheCertificate(t *testing.T) {
	ca := testenv.NewCA(t, "serve CA")
	certFile, keyFile := ca.Server(t, "live", "127.0.0.1")
	addr := serveTLS(t, certFile, keyFile)
	first, proto := servedCert(t, addr, ca.Pool())
	if proto != "HTTP/2.0" {
		t.Errorf("protocol %s, want HTTP/2.0 (h2 offered over TLS)", proto)
	}
	renewedCert, renewedKey := ca.Server(t, "renewed", "127.0.0.1")
	replace(t, certFile, keyFile, renewedCert, renewedKey)
	renewed := func() bool {
		got, _ := servedCert(t, addr, ca.Pool())
		return got.SerialNumber.Cmp(first.SerialNumber) != 0
	}
	eventually.True(t, 3*server.CertCheckEvery, renewed, "still serving serial %v after the files changed", first.SerialNumber)
}

// TestServeTLSNeedsBothFiles refuses a certificate without its key, and a pair that does not load.
func TestServeTLSNeedsBothFiles(t *testing.T) {
	ca := testenv.NewCA(t, "serve CA")
	certFile, keyFile := ca.Server(t, "live", "127.0.0.1")
	_, otherKey := ca.Server(t, "other", "127.0.0.1")
	for name, tc := range map[string]struct{ cert, key, want string }{
		"cert alone":   {certFile, "", "--tls-key"},
		"key alone":    {"", keyFile, "--tls-cert"},
		"wrong key":    {certFile, otherKey, "private key does not match"},
		"missing file": {certFile + ".nope", keyFile, "no such file"},
	} {
		t.Run(name, func(t *testing.T) {
			cfg := server.DefaultConfig()
			cfg.Addr, cfg.SoldOut, cfg.TLSCertFile, cfg.TLSKeyFile = "127.0.0.1:0", server.SoldOutOff, tc.cert, tc.key
			srv := server.New(cfg, server.Deps{Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
			err := srv.Serve(context.Background(), nil)
			if err == nil || !strings.Contains(err.Error(), tc.want) || errors.Is(err, http.ErrServerClosed) {
				t.Fatalf("serve: %v, want an error naming %q", err, tc.want)
			}
		})
	}
}
