package main

import (
	"crypto/tls"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/fsctl/fsctl/internal/harness/testenv"
)

// seller answers every purchase 202 with a new order id, over whatever protocol it is reached.
func seller() http.Handler {
	var n atomic.Int64
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/healthz" {
			return
		}
		w.WriteHeader(http.StatusAccepted)
		fmt.Fprintf(w, `{"orderId":"order-%d"}`, n.Add(1))
	})
}

// tlsSeller is seller over TLS with h2, its certificate signed by a private CA for 127.0.0.1 and
// shop.test; clientCA, when set, is the authority the server demands client certificates from.
func tlsSeller(t *testing.T, ca *testenv.CA, clientCA *testenv.CA) *httptest.Server {
	t.Helper()
	certFile, keyFile := ca.Server(t, "server", "127.0.0.1", "shop.test")
	pair, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewUnstartedServer(seller())
	hs.EnableHTTP2 = true
	hs.TLS = &tls.Config{Certificates: []tls.Certificate{pair}}
	if clientCA != nil {
		hs.TLS.ClientCAs, hs.TLS.ClientAuth = clientCA.Pool(), tls.RequireAndVerifyClientCert
	}
	hs.StartTLS()
	t.Cleanup(hs.Close)
	return hs
}

// blastArgs is a small burst at target whose stock and limit are given, so any seller will do.
func blastArgs(target string, extra ...string) []string {
	return append([]string{"blast", "--target", target, "--item", "s:i", "--buyers", "40", "--conns", "4",
		"--in", "100ms", "--stock", "100", "--limit", "1", "--jwt-secret", "0123456789abcdef0123", "--timeout", "5s"}, extra...)
}

// TestBlastTLSPrivateCA: an https target signed by a private CA is refused with the flags that fix
// it named, reached with --cacert (over h2, which the report says), and with --insecure.
func TestBlastTLSPrivateCA(t *testing.T) {
	ca := testenv.NewCA(t, "fsctl test CA")
	hs := tlsSeller(t, ca, nil)

	_, code, err := runCLI(t, blastArgs(hs.URL)...)
	if code != 1 || err == nil || !strings.Contains(err.Error(), "--cacert") || !strings.Contains(err.Error(), "--insecure") {
		t.Fatalf("without --cacert: exit %d, %v; want 1 naming --cacert and --insecure", code, err)
	}

	out, code, err := runCLI(t, blastArgs(hs.URL, "--cacert", ca.File)...)
	if code != 0 || !strings.Contains(out, "pool of 4 h2 connections") || !strings.Contains(out, "sold 40") {
		t.Fatalf("--cacert: exit %d (%v), want 0 over h2:\n%s", code, err, out)
	}
	out, _, _ = runCLI(t, blastArgs(hs.URL, "--cacert", ca.File, "--http", "1.1", "--output", "json")...)
	if !strings.Contains(out, `"protocol": "HTTP/1.1 over TLS"`) || !strings.Contains(out, `"http": "1.1"`) {
		t.Errorf("--http 1.1: want HTTP/1.1 over TLS in the JSON:\n%s", out)
	}

	// The certificate is for 127.0.0.1 and shop.test: reached as localhost it needs --server-name.
	local := strings.Replace(hs.URL, "127.0.0.1", "localhost", 1)
	if _, code, err := runCLI(t, blastArgs(local, "--cacert", ca.File)...); code != 1 || err == nil || !strings.Contains(err.Error(), "--server-name") {
		t.Errorf("another host name: exit %d, %v; want 1 naming --server-name", code, err)
	}
	if out, code, err := runCLI(t, blastArgs(local, "--cacert", ca.File, "--server-name", "shop.test")...); code != 0 {
		t.Errorf("--server-name shop.test: exit %d (%v):\n%s", code, err, out)
	}

	if out, code, err := runCLI(t, blastArgs(hs.URL, "--insecure")...); code != 0 || !strings.Contains(out, "h2") {
		t.Errorf("--insecure: exit %d (%v):\n%s", code, err, out)
	}
}

// TestBlastTLSClientCertificate: a target that demands a client certificate refuses a blast
// without one, naming --cert/--key, and serves one that presents it.
func TestBlastTLSClientCertificate(t *testing.T) {
	ca, clients := testenv.NewCA(t, "server CA"), testenv.NewCA(t, "client CA")
	hs := tlsSeller(t, ca, clients)
	_, code, err := runCLI(t, blastArgs(hs.URL, "--cacert", ca.File)...)
	if code != 1 || err == nil || !strings.Contains(err.Error(), "--cert") {
		t.Fatalf("without a client certificate: exit %d, %v; want 1 naming --cert", code, err)
	}
	cert, key := clients.Client(t, "blast", "blast")
	out, code, err := runCLI(t, blastArgs(hs.URL, "--cacert", ca.File, "--cert", cert, "--key", key)...)
	if code != 0 || !strings.Contains(out, "h2 connections") {
		t.Fatalf("--cert/--key: exit %d (%v):\n%s", code, err, out)
	}
	if _, code, err := runCLI(t, blastArgs(hs.URL, "--cacert", ca.File, "--cert", cert)...); code != 2 || err == nil || !strings.Contains(err.Error(), "--key") {
		t.Errorf("--cert without --key: exit %d, %v; want a usage error", code, err)
	}
}

// TestBlastH2C drives a plain-text server that speaks h2c with prior knowledge (as fsctl serve
// does) with --http 2, which auto's raw engine cannot: the report names h2c and why not raw.
func TestBlastH2C(t *testing.T) {
	hs := httptest.NewUnstartedServer(seller())
	hs.Config.Protocols = new(http.Protocols)
	hs.Config.Protocols.SetHTTP1(true)
	hs.Config.Protocols.SetUnencryptedHTTP2(true)
	hs.Start()
	defer hs.Close()
	out, code, err := runCLI(t, blastArgs(hs.URL, "--http", "2")...)
	if code != 0 || !strings.Contains(out, "h2c connections") || !strings.Contains(out, "engine: http (auto; not raw: the raw engine speaks HTTP/1.1 only") ||
		!strings.Contains(out, ", http 2;") {
		t.Fatalf("--http 2: exit %d (%v), want h2c on the http engine:\n%s", code, err, out)
	}
	if out, _, _ := runCLI(t, blastArgs(hs.URL)...); !strings.Contains(out, "HTTP/1.1 connections") {
		t.Errorf("auto against http://: want HTTP/1.1:\n%s", out)
	}
	if _, code, err := runCLI(t, blastArgs(hs.URL, "--http", "3")...); code != 2 || err == nil {
		t.Errorf("--http 3: exit %d, %v; want a usage error", code, err)
	}
}
