package server

import (
	"context"
	"database/sql/driver"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/fsctl/fsctl/internal/contract/outcome"
)

// errorBody is every error answer: a stable machine code plus a human sentence.
type errorBody struct {
	Error   outcome.Code `json:"error"`
	Message string       `json:"message"`
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	bp := answerBufs.Get().(*[]byte)
	defer answerBufs.Put(bp)
	if b, ok := appendAnswer((*bp)[:0], v); ok {
		*bp = b
		_, _ = w.Write(b)
		return
	}
	_ = json.NewEncoder(w).Encode(v)
}

var answerBufs = sync.Pool{New: func() any { b := make([]byte, 0, 256); return &b }}

// appendAnswer appends a purchase's answer (errorBody, reservedBody) as json.Encoder.Encode writes
// it, when its strings are plain: printable ASCII that encoding/json writes as it is (no quote,
// backslash or HTML character). False: encoding/json must write it. Every purchase is answered with
// one of the two, and encoding/json's reflection was more than half of writing one (the 10,000-unit
// burst's profile); FuzzAppendAnswer holds this to encoding/json's bytes.
func appendAnswer(b []byte, v any) ([]byte, bool) {
	switch a := v.(type) {
	case errorBody:
		if !plainJSON(string(a.Error)) || !plainJSON(a.Message) {
			return b, false
		}
		b = append(append(append(b, `{"error":"`...), a.Error...), `","message":"`...)
		return append(append(b, a.Message...), "\"}\n"...), true
	case reservedBody:
		exp, err := a.ExpiresAt.MarshalJSON() // what encoding/json writes for a time.Time
		if err != nil || !plainJSON(a.OrderID) || !plainJSON(a.Status) {
			return b, false
		}
		b = append(append(append(b, `{"orderId":"`...), a.OrderID...), `","status":"`...)
		b = append(append(append(b, a.Status...), `","expiresAt":`...), exp...)
		return append(b, "}\n"...), true
	}
	return b, false
}

func plainJSON(s string) bool {
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c < 0x20 || c > 0x7e, c == '"', c == '\\', c == '<', c == '>', c == '&':
			return false
		}
	}
	return true
}

// writeError answers with err's code and message; errors without a code are internal and their
// details stay in the log.
// An error without a code that says a store could not be reached (PostgreSQL stopped, Redis
// frozen) is 503 UNAVAILABLE with a Retry-After, not a 500: the buyer's pay or cancel can be sent
// again once the store is back.
func (s *Server) writeError(w http.ResponseWriter, r *http.Request, err error) {
	code := outcome.CodeOf(err)
	s.traceOutcome(r, code, err)
	if code == outcome.Internal && storeDown(err) {
		s.log.Warn("store unavailable", "method", r.Method, "path", r.URL.Path, "err", err)
		s.writeCode(w, outcome.Unavailable, "a store this needs is unavailable right now; retry")
		return
	}
	if code == outcome.Internal {
		s.log.Error("internal error", "method", r.Method, "path", r.URL.Path, "err", err)
	}
	s.writeCode(w, code, outcome.MessageOf(err))
}

// storeDown reports an error that means a store could not be reached or answered in time: a
// refused or broken connection, a connection PostgreSQL closed, a timeout, or PostgreSQL shutting
// down or starting up (SQLSTATE classes 08 and 57). A request answers it 503, and a start (--start-wait) waits it out.
func storeDown(err error) bool {
	var connErr *pgconn.ConnectError
	var netErr net.Error
	var pgErr *pgconn.PgError
	switch {
	case errors.As(err, &connErr), errors.As(err, &netErr):
		return true
	case errors.As(err, &pgErr):
		return strings.HasPrefix(pgErr.Code, "08") || strings.HasPrefix(pgErr.Code, "57")
	}
	// A pooled connection PostgreSQL closed as it shut down is "conn closed" on its next use, before
	// anything is sent (chaos seed 15: a cancel during a stop answered 500). database/sql (the
	// migrations' ping) says "bad connection" for one that broke during its handshake (a CI game
	// day's instance added while PostgreSQL was cut off gave up its start on it).
	return errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, context.DeadlineExceeded) || pgconn.Timeout(err) || errors.Is(err, pgconn.ErrConnClosed) ||
		errors.Is(err, driver.ErrBadConn)
}

func (s *Server) writeCode(w http.ResponseWriter, code outcome.Code, msg string) {
	status := outcome.HTTPStatus(code)
	if status == http.StatusServiceUnavailable || status == http.StatusTooManyRequests || status == http.StatusTooEarly {
		w.Header().Set("Retry-After", strconv.Itoa(1))
	}
	writeJSON(w, status, errorBody{Error: code, Message: msg})
}

// statusRecorder remembers the status for the latency histogram.
type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (r *statusRecorder) WriteHeader(code int) {
	r.status = code
	r.ResponseWriter.WriteHeader(code)
}

// Unwrap lets http.ResponseController reach the connection's writer (a purchase's late answer
// flushes through it).
func (r *statusRecorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

func (s *Server) instrument(route string, h http.HandlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		rec := &statusRecorder{ResponseWriter: w, status: http.StatusOK}
		r, rt := s.traceRequest(route, r)
		h(rec, r)
		rt.end(r, s.tracer, rec.status)
		s.metrics.observeRequest(route, rec.status, time.Since(start), rt.sampledID())
	})
}

// jsonFallback answers the requests no route takes: routes (the API's routes without a catch-all)
// decides between 404 and 405 (with its Allow header), answered with the same JSON error bodies as
// everything else.
func (s *Server) jsonFallback(routes *http.ServeMux) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h, _ := routes.Handler(r)
		probe := &statusProbe{header: http.Header{}}
		h.ServeHTTP(probe, r)
		if allow := probe.header.Get("Allow"); allow != "" {
			w.Header().Set("Allow", allow)
		}
		if probe.status == http.StatusMethodNotAllowed {
			s.writeCode(w, outcome.MethodNotAllowed, r.Method+" is not allowed on "+r.URL.Path+"; allowed: "+probe.header.Get("Allow"))
			return
		}
		s.writeCode(w, outcome.NotFound, "no such endpoint: "+r.Method+" "+r.URL.Path)
	})
}

// statusProbe records what the mux's own 404/405 handler would answer, and drops its text body.
type statusProbe struct {
	header http.Header
	status int
}

func (p *statusProbe) Header() http.Header         { return p.header }
func (p *statusProbe) Write(b []byte) (int, error) { return len(b), nil }
func (p *statusProbe) WriteHeader(code int)        { p.status = code }
