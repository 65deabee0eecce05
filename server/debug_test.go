package server

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/fsctl/fsctl/internal/harness/testenv/eventually"
)

// TestServeDebug: the opt-in profiler answers on its own address, and stops with its context.
func TestServeDebug(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close() // a free port for ServeDebug, which listens itself
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- ServeDebug(ctx, addr, slog.New(slog.DiscardHandler)) }()

	var body string
	eventually.OK(t, 10*time.Second, func() error {
		resp, err := http.Get("http://" + addr + "/debug/pprof/")
		if err != nil {
			return fmt.Errorf("the profiler did not answer on %s: %v", addr, err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("the profiler did not answer on %s: %s", addr, resp.Status)
		}
		body = string(b)
		return nil
	})
	if !strings.Contains(body, "goroutine") || !strings.Contains(body, "heap") {
		t.Errorf("the profiler's index lists no profiles:\n%s", body)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("ServeDebug after its context ended: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("ServeDebug did not stop with its context")
	}
	if _, err := http.Get("http://" + addr + "/debug/pprof/"); err == nil {
		t.Error("the profiler still answers after it stopped")
	}
}

// TestServeDebugBadAddress: an address it cannot listen on is an error that names it.
func TestServeDebugBadAddress(t *testing.T) {
	err := ServeDebug(context.Background(), "256.0.0.1:99999", slog.New(slog.DiscardHandler))
	if err == nil || !strings.Contains(err.Error(), "256.0.0.1:99999") {
		t.Fatalf("ServeDebug on a bad address: %v, want an error naming it", err)
	}
}
