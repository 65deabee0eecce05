package main

import (
	"context"
	"io"
	"net"
	"net/http"
	"testing"

	"github.com/valyala/fasthttp"
	"github.com/valyala/fasthttp/fasthttputil"
)

// serveFastOnce serves h on an in-memory fasthttp listener and sends it one GET of path with the
// given headers.
func serveFastOnce(t *testing.T, h fasthttp.RequestHandler, path string, header map[string]string) *http.Response {
	t.Helper()
	ln := fasthttputil.NewInmemoryListener()
	srv := &fasthttp.Server{Handler: h}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Shutdown() })
	client := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return ln.Dial()
	}}}
	t.Cleanup(client.CloseIdleConnections)
	req, err := http.NewRequest(http.MethodGet, "http://floor"+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = resp.Body.Close() })
	return resp
}

// TestFastShimCarriesTheRequestAndTheAnswer: the shim's handler sees the path, the method and the
// headers, and its status, headers and body reach the client, so that the fasthttp-shim floor
// measures a handler's real work.
func TestFastShimCarriesTheRequestAndTheAnswer(t *testing.T) {
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet || r.URL.Path != "/p" || r.Header.Get("Idempotency-Key") != "k-1" {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Retry-After", "3")
		w.WriteHeader(http.StatusGone)
		_, _ = w.Write(soldOutBody)
		w.WriteHeader(http.StatusOK) // a second status is ignored, as net/http ignores it
	})
	resp := serveFastOnce(t, func(c *fasthttp.RequestCtx) { fastShim(c, h) }, "/p", map[string]string{"Idempotency-Key": "k-1"})
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusGone || string(body) != string(soldOutBody) ||
		resp.Header.Get("Content-Type") != "application/json" || resp.Header.Get("Retry-After") != "3" {
		t.Fatalf("answer %d %q, headers %v; want 410, the sold-out body, its Content-Type and Retry-After", resp.StatusCode, body, resp.Header)
	}
}

// TestFastRoutesAnswerTheFloor: the fasthttp mode answers as net/http's http mode does, and a path
// that is no mode is 404, so a mistyped mode cannot pass for a fast floor.
func TestFastRoutesAnswerTheFloor(t *testing.T) {
	f := &floor{errs: make(chan error, 1)}
	routes := f.fastRoutes()
	resp := serveFastOnce(t, routes, "/fasthttp", nil)
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusGone || string(body) != string(soldOutBody) || resp.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("/fasthttp answered %d %q; want 410 and the sold-out body", resp.StatusCode, body)
	}
	if resp := serveFastOnce(t, routes, "/fasthttp-nothing", nil); resp.StatusCode != http.StatusNotFound {
		t.Fatalf("an unknown mode answered %d, want 404", resp.StatusCode)
	}
}
