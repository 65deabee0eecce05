package server

import (
	"bufio"
	"bytes"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"github.com/valyala/fasthttp"
	"github.com/valyala/fasthttp/fasthttputil"
)

// TestAPanicOnFastHTTPClosesItsConnection: a handler that panics on the fasthttp engine is
// logged and its connection closed unanswered, as net/http does, and the server goes on: the
// next connection is answered, with the request as net/http would have read it (its query,
// headers, body and Host).
func TestAPanicOnFastHTTPClosesItsConnection(t *testing.T) {
	var logged bytes.Buffer
	s := &Server{log: slog.New(slog.NewTextHandler(&logged, nil))}
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/panic" {
			panic("boom")
		}
		body, _ := io.ReadAll(r.Body)
		w.Header().Set("X-Seen", r.Method+" "+r.URL.Query().Get("q")+" "+r.Header.Get("X-Buyer")+" "+r.Host+" "+string(body))
		w.WriteHeader(http.StatusCreated)
	})
	ln := fasthttputil.NewInmemoryListener()
	srv := &fasthttp.Server{Handler: s.fastHandler(h), ErrorHandler: s.fastError}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Shutdown() })

	send := func(request string) (*http.Response, error) {
		c, err := ln.Dial()
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Close() })
		if _, err := io.WriteString(c, request); err != nil {
			t.Fatal(err)
		}
		return http.ReadResponse(bufio.NewReader(c), nil)
	}
	if resp, err := send("GET /panic HTTP/1.1\r\nHost: x\r\n\r\n"); err == nil {
		t.Fatalf("the panicking request was answered %s, want its connection closed unanswered", resp.Status)
	}
	if !strings.Contains(logged.String(), "boom") {
		t.Errorf("the panic was not logged: %q", logged.String())
	}
	resp, err := send("POST /next?q=1 HTTP/1.1\r\nHost: shop\r\nX-Buyer: ann\r\nContent-Length: 4\r\n\r\nbody")
	if err != nil {
		t.Fatalf("the next request after a panic: %v", err)
	}
	if got := resp.Header.Get("X-Seen"); resp.StatusCode != http.StatusCreated || got != "POST 1 ann shop body" {
		t.Fatalf("the next request: %s, X-Seen %q, want 201 and %q", resp.Status, got, "POST 1 ann shop body")
	}
}
