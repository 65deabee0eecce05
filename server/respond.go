package server

import (
	"encoding/json"
	"net/http"
	"strconv"
	"time"

	"github.com/fsctl/fsctl/outcome"
)

// errorBody is every error answer: a stable machine code plus a human sentence.
type errorBody struct {
	Error   outcome.Code `json:"error"`
	Message string       `json:"message"`
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// writeError answers with err's code and message; errors without a code are internal and their
// details stay in the log.
func (s *Server) writeError(w http.ResponseWriter, r *http.Request, err error) {
	code := outcome.CodeOf(err)
	if code == outcome.Internal {
		s.log.Error("internal error", "method", r.Method, "path", r.URL.Path, "err", err)
	}
	s.writeCode(w, code, outcome.MessageOf(err))
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

func (s *Server) instrument(route string, h http.HandlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		rec := &statusRecorder{ResponseWriter: w, status: http.StatusOK}
		h(rec, r)
		s.metrics.requests.WithLabelValues(route, strconv.Itoa(rec.status)).Observe(time.Since(start).Seconds())
	})
}

// jsonFallback lets the mux decide between 404 and 405 (with its Allow header) for requests no
// route takes, and answers them with the same JSON error bodies as everything else.
func (s *Server) jsonFallback(mux *http.ServeMux) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h, pattern := mux.Handler(r)
		if pattern != "" {
			mux.ServeHTTP(w, r)
			return
		}
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
