package server

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"
)

// MetricsHandler serves the operator's endpoints of an instance: GET /metrics, and /healthz and
// /readyz for probes. It is what the metrics listener serves (Config.MetricsAddr), and the only
// HTTP an instance that runs the consumer role alone answers.
func (s *Server) MetricsHandler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", s.metrics.handler())
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	})
	mux.HandleFunc("GET /readyz", s.handleReady)
	return mux
}

// ServeMetrics serves MetricsHandler on addr until ctx ends, so that /metrics need not be on the
// public port, and a consumer-only instance can be scraped and probed.
func (s *Server) ServeMetrics(ctx context.Context, addr string, ready func(net.Addr)) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("metrics listener %s: %w", addr, err)
	}
	hs := &http.Server{Handler: s.MetricsHandler(), ReadHeaderTimeout: 5 * time.Second, ReadTimeout: 10 * time.Second,
		WriteTimeout: 30 * time.Second, ErrorLog: slog.NewLogLogger(s.log.Handler(), slog.LevelWarn)}
	s.log.Info("serving metrics and probes", "addr", ln.Addr().String(), "paths", "/metrics /healthz /readyz")
	if ready != nil {
		ready(ln.Addr())
	}
	return serveUntil(ctx, hs, ln)
}
