package server

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"runtime/debug"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/fsctl/fsctl/internal/contract/outcome"
)

// The engines that serve the API's connections (Config.HTTPEngine, fsctl serve --http-engine).
//
// net/http, the default, speaks HTTP/1.1 and HTTP/2 (h2 over TLS, h2c in plain text). fasthttp
// speaks HTTP/1.1 alone and costs less: make bench-floor put it 9-12 µs a request below net/http
// under the same reserve on the 2-core box, and make bench-sale's 10,000-unit burst cost the
// server a quarter less CPU a request (docs/benchmarks.md, the sixteenth and seventeenth parts).
// Most of that is how it holds a connection: no goroutine reading in the background while a
// handler runs, and the answers to requests that came back to back written in one system call.
//
// Both serve the same routes through the same handlers (Handler): on fasthttp each request is
// handed to them as a net/http request on its connection's goroutine (fastHandler). What differs:
// a purchase's deadline (deadline.go) is kept from a worker goroutine, since fasthttp sends an
// answer only once its handler returns; a buyer who hangs up does not end a request's context;
// and a request fasthttp cannot parse is answered here (fastError).
const (
	EngineNetHTTP  = "net/http"
	EngineFastHTTP = "fasthttp"
)

// fastMaxBody is the largest request body fasthttp reads: far above every route's own cap (a
// purchase's MaxPurchaseBody, the admin API's 1 KiB), which answer a body between the two.
const fastMaxBody = 64 << 10

// fastMaxHeader is the most header bytes a request may carry, as net/http's MaxHeaderBytes.
const fastMaxHeader = 16 << 10

// serveFast is Serve on fasthttp: it serves ln (over TLS when tlsCfg is set, HTTP/1.1 only)
// until ctx ends, then lets the requests in flight finish for up to 10 s.
func (s *Server) serveFast(ctx context.Context, ln net.Listener, tlsCfg *tls.Config, shed *http.Server, ready func(addr net.Addr)) error {
	fs := &fasthttp.Server{
		Handler:      s.fastHandler(s.Handler()),
		ErrorHandler: s.fastError,
		// As net/http's ReadHeaderTimeout, for the whole request: its body is a few hundred bytes.
		ReadTimeout:                  s.cfg.ReadHeaderTimeout,
		WriteTimeout:                 s.cfg.WriteTimeout,
		IdleTimeout:                  2 * time.Minute,
		ReadBufferSize:               fastMaxHeader,
		MaxRequestBodySize:           fastMaxBody,
		NoDefaultServerHeader:        true,
		NoDefaultContentType:         true,
		DisablePreParseMultipartForm: true,
		CloseOnShutdown:              true,
		Logger:                       fastLogger{s.log},
	}
	names := "HTTP/1.1"
	if tlsCfg != nil {
		c := tlsCfg.Clone()
		c.NextProtos = []string{"http/1.1"} // a client that offers h2 is told HTTP/1.1
		ln, names = tls.NewListener(ln, c), "HTTP/1.1 over TLS"
	}
	s.log.Info("serving checkout API", "addr", ln.Addr().String(), "max_conns", s.cfg.MaxConns, "shed_conns", s.cfg.ShedConns,
		"accept_backlog", acceptBacklog(), "protocols", names, "engine", EngineFastHTTP)
	if ready != nil {
		ready(ln.Addr())
	}
	errc := make(chan error, 1)
	go func() { errc <- fs.Serve(ln) }()
	s.startSoldOutFlag(ctx)
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if shed != nil {
		defer shed.Close()
	}
	if err := fs.ShutdownWithContext(shutdownCtx); err != nil && !errors.Is(err, net.ErrClosed) {
		return fmt.Errorf("shutdown: %w", err)
	}
	if err := <-errc; err != nil && !errors.Is(err, net.ErrClosed) {
		return err
	}
	return nil
}

// fastHandler serves one fasthttp request with h, on the connection's goroutine: h gets a
// net/http request made of it (fastRequest) and a ResponseWriter that fills fasthttp's answer,
// which fasthttp sends when h returns. A panic in h closes the connection unanswered and is
// logged, as net/http does.
func (s *Server) fastHandler(h http.Handler) fasthttp.RequestHandler {
	return func(c *fasthttp.RequestCtx) {
		r, err := fastRequest(c)
		if err != nil {
			s.fastError(c, err)
			return
		}
		defer s.recoverFast(c, r)
		w := &fastWriter{c: c, header: make(http.Header, 4)}
		h.ServeHTTP(w, r)
		w.WriteHeader(http.StatusOK) // an answer without a body is 200, unless h said otherwise
	}
}

// fastRequest is c's request as net/http would have read it. Everything is copied: a purchase
// that outlives its answer (deadline.go) may still read it after fasthttp reused c.
func fastRequest(c *fasthttp.RequestCtx) (*http.Request, error) {
	uri := string(c.RequestURI())
	u, err := url.ParseRequestURI(uri)
	if err != nil {
		return nil, err
	}
	r := &http.Request{
		Method: string(c.Method()), URL: u, RequestURI: uri,
		Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: make(http.Header, c.Request.Header.Len()), Body: http.NoBody,
		Host: string(c.Host()), RemoteAddr: c.RemoteAddr().String(), TLS: c.TLSConnectionState(),
	}
	if !c.Request.Header.IsHTTP11() {
		r.Proto, r.ProtoMinor = "HTTP/1.0", 0
	}
	for k, v := range c.Request.Header.All() {
		r.Header.Add(string(k), string(v))
	}
	r.Header.Del("Host") // net/http keeps it in r.Host alone
	if b := c.Request.Body(); len(b) > 0 {
		r.Body, r.ContentLength = io.NopCloser(bytes.NewReader(bytes.Clone(b))), int64(len(b))
	}
	return r.WithContext(context.Background()), nil
}

// fastWriter is a net/http ResponseWriter over fasthttp's answer: the header is copied in at
// the first WriteHeader or Write, and later statuses are ignored, as net/http ignores them.
type fastWriter struct {
	c      *fasthttp.RequestCtx
	header http.Header
	wrote  bool
}

func (w *fastWriter) Header() http.Header { return w.header }

func (w *fastWriter) WriteHeader(status int) {
	if w.wrote || status < http.StatusOK { // an informational 1xx is not sent
		return
	}
	w.wrote = true
	for k, vs := range w.header {
		for _, v := range vs {
			w.c.Response.Header.Add(k, v)
		}
	}
	w.c.SetStatusCode(status)
}

func (w *fastWriter) Write(b []byte) (int, error) {
	w.WriteHeader(http.StatusOK)
	return w.c.Write(b)
}

// recoverFast ends a request whose handler panicked: logged (http.ErrAbortHandler excepted),
// and its connection closed without an answer.
func (s *Server) recoverFast(c *fasthttp.RequestCtx, r *http.Request) {
	p := recover()
	if p == nil {
		return
	}
	if p != http.ErrAbortHandler {
		s.log.Error("panic serving a request; its connection is closed", "method", r.Method, "path", r.URL.Path,
			"panic", fmt.Sprint(p), "stack", string(debug.Stack()))
	}
	c.Response.Reset()
	c.HijackSetNoResponse(true)
	c.Hijack(func(net.Conn) {}) // fasthttp closes the connection once this returns
}

// fastError answers a request fasthttp could not read, or whose target is no URL, in the API's
// own JSON errors, and closes its connection. The request's bytes are never echoed.
func (s *Server) fastError(c *fasthttp.RequestCtx, err error) {
	c.Response.Reset()
	c.SetConnectionClose()
	w := &fastWriter{c: c, header: make(http.Header, 2)}
	var small *fasthttp.ErrSmallBuffer
	switch {
	case errors.Is(err, fasthttp.ErrBodyTooLarge):
		s.writeCode(w, outcome.BodyTooLarge, fmt.Sprintf("request body too large (%d KiB at most)", fastMaxBody>>10))
	case errors.As(err, &small):
		writeJSON(w, http.StatusRequestHeaderFieldsTooLarge, errorBody{Error: outcome.InvalidRequest,
			Message: fmt.Sprintf("request headers too large (%d KiB at most)", fastMaxHeader>>10)})
	default:
		s.writeCode(w, outcome.InvalidRequest, "malformed HTTP request")
	}
}

// fastLogger writes fasthttp's own messages (a connection that failed) at warning level.
type fastLogger struct{ log *slog.Logger }

func (l fastLogger) Printf(format string, args ...any) { l.log.Warn(fmt.Sprintf(format, args...)) }
