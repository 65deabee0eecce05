package server

import (
	"context"
	"net/http"
	"sync"
	"time"
)

type readyBody struct {
	Status  string            `json:"status"`
	Version string            `json:"version"`
	Checks  map[string]string `json:"checks"`
	Limits  map[string]int    `json:"limits"`
}

// handleReady checks every dependency in parallel, each bounded by a timeout, and answers 503
// naming the ones that failed.
func (s *Server) handleReady(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
	defer cancel()
	b := readyBody{
		Status: "ready", Version: s.cfg.Version, Checks: map[string]string{},
		Limits: map[string]int{"maxConns": s.cfg.MaxConns, "acceptBacklog": acceptBacklog()},
	}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for name, probe := range s.probes {
		wg.Go(func() {
			res := "ok"
			if err := probe(ctx); err != nil {
				res = err.Error()
			}
			mu.Lock()
			b.Checks[name] = res
			if res != "ok" {
				b.Status = "not ready"
			}
			mu.Unlock()
		})
	}
	wg.Wait()
	status := http.StatusOK
	if b.Status != "ready" {
		status = http.StatusServiceUnavailable
	}
	writeJSON(w, status, b)
}
