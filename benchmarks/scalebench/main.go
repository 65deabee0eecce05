// Command scalebench measures how the cost of `fsctl blast` grows with the number of buyers
// (`make bench-scale`). For each buyer count (-buyers, 5,000, 50,000 and 500,000 by default) it
// releases one burst from ONE blast process against each target (-targets): "trivial", an HTTP
// endpoint of this process that answers every request 204, and "serve", the bundled checkout
// (`fsctl serve`, started here on the local stack) selling a fresh sale of min(10000, N/5) units.
// Each burst reports, in one table: the preparation time, the release spread (p99 of when the
// buyers woke after the barrier), blast's peak RSS in all and per buyer, its CPU per request,
// requests/s and the verdict. Then (-shard-check N) it releases the same N-buyer burst against
// serve once from one process and once split over 4 processes (--shard i/4, one --at) merged by
// `fsctl blast merge`, and fails unless both give the same verdicts and counts. Every burst
// against serve is checked by `fsctl reconcile`.
//
// Run it on the local stack (make stack-up) from the repository root:
//
//	go run ./benchmarks/scalebench -fsctl bin/fsctl
//	go run ./benchmarks/scalebench -buyers 2000,5000 -shard-check 5000   # a quick check
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/fsctl/fsctl/benchmarks/internal/benchrun"
)

// options are the benchmark's flags.
type options struct {
	fsctl      string
	addr       string
	postgres   string
	buyers     []int
	targets    []string
	conns      int
	shards     int           // stock shards of each sale's item
	lead       time.Duration // time from starting blast to the release; 0 picks it by size
	shardCheck int           // buyers of the shard equivalence check; 0 skips it
	// generatorCores and serverCores are the taskset lists blast and fsctl serve run on; "" for any.
	generatorCores, serverCores string
}

func main() {
	var o options
	var buyers, targets string
	flag.StringVar(&o.fsctl, "fsctl", "bin/fsctl", "the fsctl binary to run (blast, serve, sale create, reconcile)")
	flag.StringVar(&o.addr, "addr", "127.0.0.1:18081", "listen address of fsctl serve")
	postgres := benchrun.URLFlag("postgres-url", "FSCTL_POSTGRES_URL", benchrun.LocalPostgres, "PostgreSQL of the stack (to wait for the orders before reconcile)")
	flag.StringVar(&buyers, "buyers", "5000,50000,500000", "buyers of each burst, comma separated")
	flag.StringVar(&targets, "targets", "trivial,serve", "targets, comma separated: trivial (a 204 endpoint in this process) and serve (fsctl serve)")
	flag.IntVar(&o.conns, "conns", 1000, "connections of blast's pool (the shard check gives each of its 4 processes a quarter)")
	flag.IntVar(&o.shards, "shards", 4, "stock shards of each sale's item")
	flag.DurationVar(&o.lead, "lead", 0, "time from starting blast to the release (--in, --at); 0: 3s up to 50,000 buyers, 12s above")
	flag.IntVar(&o.shardCheck, "shard-check", 500000, "buyers of the check that 4 shards + blast merge give the single process's verdict and counts (0 skips it)")
	generatorCores := benchrun.CoresFlag("generator-cores", "run blast (every shard and the merge too)")
	serverCores := benchrun.CoresFlag("server-cores", "run fsctl serve (the trivial endpoint runs in this process: start scalebench under taskset to place it)")
	flag.Parse()
	o.generatorCores, o.serverCores = *generatorCores, *serverCores
	o.postgres = postgres()
	var err error
	if o.buyers, err = counts(buyers); err != nil {
		fail(err)
	}
	for _, t := range strings.Split(targets, ",") {
		t = strings.TrimSpace(t)
		if t != targetTrivial && t != targetServe {
			fail(fmt.Errorf("-targets %q: want trivial and/or serve", targets))
		}
		o.targets = append(o.targets, t)
	}
	if o.shardCheck < 0 || o.conns < shardCount {
		fail(fmt.Errorf("-shard-check %d, -conns %d: want a count not below 0, and at least %d connections", o.shardCheck, o.conns, shardCount))
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, o); err != nil {
		fail(err)
	}
}

// counts parses a comma separated list of positive buyer counts.
func counts(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			return nil, fmt.Errorf("-buyers %q: want positive counts", s)
		}
		out = append(out, n)
	}
	return out, nil
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "scalebench:", err)
	os.Exit(1)
}

// leadFor is the time between starting blast and the release for a burst of n buyers: enough
// to prepare every buyer (500,000 take 3-4 s) so that the barrier opens on time.
func (o options) leadFor(n int) time.Duration {
	switch {
	case o.lead > 0:
		return o.lead
	case n <= 50000:
		return 3 * time.Second
	}
	return 12 * time.Second
}

// wants says whether target is among -targets.
func (o options) wants(target string) bool {
	for _, t := range o.targets {
		if t == target {
			return true
		}
	}
	return false
}

// run starts the targets, measures every (target, buyers) burst, prints the table and runs the
// shard check. It fails when a burst ends with an exit status its target does not allow, or
// the shards disagree with the single process.
func run(ctx context.Context, o options) error {
	dir, err := os.MkdirTemp("", "scalebench")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	defer benchrun.ResetSales(context.WithoutCancel(ctx)) // no holds left to expire into a later run
	b := bench{o: o, dir: dir}
	machine := fmt.Sprintf("machine: %d cores (nproc), load average %s", runtime.NumCPU(), benchrun.Loadavg())
	if o.wants(targetTrivial) {
		url, stop, err := startTrivial()
		if err != nil {
			return err
		}
		defer stop()
		b.trivialURL = url
		machine += "; trivial endpoint " + url
	}
	if o.wants(targetServe) || o.shardCheck > 0 {
		srv, err := benchrun.StartServer(ctx, o.fsctl, o.serverCores, o.addr, dir)
		if err != nil {
			return err
		}
		defer srv.Stop()
		b.serveURL = "http://" + o.addr
		machine += fmt.Sprintf("; fsctl serve pid %d on %s", srv.Cmd.Process.Pid, b.serveURL)
	}
	fmt.Println(machine + benchrun.Pinning(map[string]string{"server": o.serverCores, "generator": o.generatorCores}))
	var rows []measurement
	for _, target := range o.targets {
		for _, n := range o.buyers {
			m, err := b.measure(ctx, target, n)
			if err != nil {
				return err
			}
			rows = append(rows, m)
		}
	}
	report(rows)
	var bad []string
	for _, m := range rows {
		if !m.accepted() {
			bad = append(bad, fmt.Sprintf("%s %d buyers: exit %d", m.target, m.buyers, m.exit))
		}
	}
	if o.shardCheck > 0 {
		if err := b.shardCheck(ctx, o.shardCheck); err != nil {
			bad = append(bad, err.Error())
		}
	}
	if len(bad) > 0 {
		return errors.New(strings.Join(bad, "; "))
	}
	return nil
}
