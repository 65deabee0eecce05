package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"time"
)

// ServeDebug serves Go's profiler (net/http/pprof under /debug/pprof/) on addr until ctx ends. It
// is opt-in and separate from the API listener: a profile of the purchase path is taken without
// exposing the profiler to buyers. Keep addr on loopback or a private interface.
func ServeDebug(ctx context.Context, addr string, log *slog.Logger) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("debug listener %s: %w", addr, err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	log.Warn("profiler listening (pprof); keep this address private", "addr", ln.Addr().String(),
		"example", "go tool pprof http://"+ln.Addr().String()+"/debug/pprof/profile?seconds=10")
	return serveUntil(ctx, hs, ln)
}

// serveUntil serves hs on ln until ctx ends, then shuts it down within a second: the operator's
// listeners (profiler, metrics) have no request worth waiting longer for.
func serveUntil(ctx context.Context, hs *http.Server, ln net.Listener) error {
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_ = hs.Shutdown(sctx)
	if err := <-errc; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
