package server_test

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/fsctl/fsctl/internal/harness/testenv"
	"github.com/fsctl/fsctl/server"
	checkouttest "github.com/fsctl/fsctl/server/servertest"
)

// onFastHTTP serves a test checkout on the fasthttp engine.
func onFastHTTP(cfg *server.Config) { cfg.HTTPEngine = server.EngineFastHTTP }

// TestTheFastHTTPEngineAnswersAsNetHTTP runs the purchase's answers through a checkout served by
// fasthttp, against the real stack: a reservation, its replay, the next buyer sold out, and a
// client's mistakes, each answered as net/http's engine answers them (JSON errors, 4xx), and no
// unit sold twice.
func TestTheFastHTTPEngineAnswersAsNetHTTP(t *testing.T) {
	c := checkouttest.Start(t, checkouttest.Options{Quantity: 1, Tune: onFastHTTP})
	status, first := c.Buy("ann", "hot", "k-ann")
	if status != http.StatusAccepted || !strings.Contains(first, `"orderId"`) {
		t.Fatalf("first purchase: %d %s, want 202 with an order", status, first)
	}
	if status, replay := c.Buy("ann", "hot", "k-ann"); status != http.StatusAccepted || replay != first {
		t.Fatalf("replay: %d %s, want the first answer again: %s", status, replay, first)
	}
	if status, body := c.Buy("bob", "hot", "k-bob"); status != http.StatusGone || !strings.Contains(body, `"SOLD_OUT"`) {
		t.Fatalf("second buyer: %d %s, want 410 SOLD_OUT", status, body)
	}
	if status, body := c.Buy("cat", "nothing", "k-cat"); status != http.StatusNotFound || !strings.Contains(body, `"NOT_FOUND"`) {
		t.Fatalf("unknown item: %d %s, want 404 NOT_FOUND", status, body)
	}

	purchase := "/api/v1/sales/" + c.Sale.ID + "/items/hot/purchase"
	auth := "Authorization: Bearer " + c.Token("dan") + "\r\n"
	for name, tc := range map[string]struct {
		request string
		status  int
		code    string
	}{
		"no idempotency key": {"POST " + purchase + " HTTP/1.1\r\nHost: x\r\n" + auth + "Content-Length: 0\r\n\r\n", 400, "INVALID_REQUEST"},
		"no token":           {"POST " + purchase + " HTTP/1.1\r\nHost: x\r\nIdempotency-Key: k\r\nContent-Length: 0\r\n\r\n", 401, "UNAUTHORIZED"},
		"unknown route":      {"GET /api/v1/nothing HTTP/1.1\r\nHost: x\r\n\r\n", 404, "NOT_FOUND"},
		"wrong method":       {"GET " + purchase + " HTTP/1.1\r\nHost: x\r\n\r\n", 405, "METHOD_NOT_ALLOWED"},
		"body over the purchase's cap": {"POST " + purchase + " HTTP/1.1\r\nHost: x\r\n" + auth + "Idempotency-Key: k-big\r\nContent-Type: application/json\r\n" +
			fmt.Sprintf("Content-Length: %d\r\n\r\n%s", 2048, strings.Repeat(" ", 2048)), 413, "BODY_TOO_LARGE"},
		"body over the engine's cap": {fmt.Sprintf("POST %s HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n", purchase, 1<<20), 413, "BODY_TOO_LARGE"},
		"headers over 16 KiB":        {"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: " + strings.Repeat("a", 20<<10) + "\r\n\r\n", 431, "INVALID_REQUEST"},
		"malformed request line":     {"BREW\r\n\r\n", 400, "INVALID_REQUEST"},
		"no URL for a target":        {"GET %zz HTTP/1.1\r\nHost: x\r\n\r\n", 400, "INVALID_REQUEST"},
	} {
		t.Run(name, func(t *testing.T) {
			resp := rawRequest(t, c.Base, tc.request)
			body, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != tc.status || !strings.Contains(string(body), `"error":"`+tc.code+`"`) ||
				resp.Header.Get("Content-Type") != "application/json" {
				t.Fatalf("answer %d %s (Content-Type %q), want %d with a JSON %s", resp.StatusCode, body, resp.Header.Get("Content-Type"), tc.status, tc.code)
			}
		})
	}
	if status, body := c.Buy("ann", "hot", "k-ann"); status != http.StatusAccepted || body != first {
		t.Fatalf("after the bad requests, the replay: %d %s, want %s", status, body, first)
	}
}

// rawRequest writes request as it is on a new connection to base and reads the answer.
func rawRequest(t *testing.T, base, request string) *http.Response {
	t.Helper()
	conn, err := net.DialTimeout("tcp", strings.TrimPrefix(base, "http://"), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(conn, request); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("no answer: %v", err)
	}
	t.Cleanup(func() { _ = resp.Body.Close() })
	return resp
}

// TestTheFastHTTPEngineSpeaksHTTP1OverTLS: over TLS fasthttp answers HTTP/1.1 to a client that
// offers h2 too, with the configured certificate.
func TestTheFastHTTPEngineSpeaksHTTP1OverTLS(t *testing.T) {
	ca := testenv.NewCA(t, "serve CA")
	certFile, keyFile := ca.Server(t, "live", "127.0.0.1")
	addr := serveTLS(t, server.EngineFastHTTP, certFile, keyFile)
	cert, proto := servedCert(t, addr, ca.Pool())
	if proto != "HTTP/1.1" || cert.Subject.CommonName != "live" {
		t.Fatalf("served %s with certificate %q, want HTTP/1.1 with %q", proto, cert.Subject.CommonName, "live")
	}
}
