package main

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os/exec"
	"time"

	"github.com/fsctl/fsctl/benchmarks/internal/benchrun"
)

// startTrivial serves the trivial endpoint (204 to every request, as scripts/bench-blast.sh's
// server) on 127.0.0.1 from a goroutine of this process, a process apart from blast's. It
// returns the endpoint's URL and a function that closes it.
func startTrivial() (string, func(), error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	srv := &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			w.WriteHeader(http.StatusNoContent)
		}),
		ReadHeaderTimeout: time.Minute,
	}
	go func() { _ = srv.Serve(ln) }()
	return "http://" + ln.Addr().String(), func() { _ = srv.Close() }, nil
}

// createSale creates (or resets) sale id with one item "drop" of units units over -shards stock
// shards and a limit of one unit per buyer.
func createSale(ctx context.Context, o options, dir, id string, units int) error {
	return benchrun.CreateSale(ctx, o.fsctl, dir, id, "drop", units, o.shards)
}

// checkSale waits until PostgreSQL holds the sale's sold orders, then runs `fsctl reconcile`
// on it, which must find Redis, Kafka and PostgreSQL in agreement.
func checkSale(ctx context.Context, o options, saleID string, sold int) error {
	if _, err := benchrun.WaitPostgres(ctx, o.postgres, saleID, sold); err != nil {
		return err
	}
	if out, err := exec.CommandContext(ctx, o.fsctl, "reconcile", "--sale", saleID).CombinedOutput(); err != nil {
		return fmt.Errorf("fsctl reconcile --sale %s found a broken invariant: %w\n%s", saleID, err, out)
	}
	fmt.Printf("  reconcile --sale %s: OK\n", saleID)
	return nil
}
