// Command salebench is the standing benchmark of the whole purchase path (`make bench-sale`): it
// starts `fsctl serve` on the local stack, measures the box's HTTP ceiling (wrk → /healthz) and
// the sold-out purchase path (wrk, a fresh Idempotency-Key each request), then releases a burst of
// buyers (`fsctl blast --engine raw`) at each stock size and reports, in one table: the time to the
// last unit sold, until every buyer was answered and until the last order was in PostgreSQL,
// requests/s as a ratio of the ceiling, the server's CPU per request, and both processes' memory.
// Every burst is checked by `fsctl reconcile`; a broken invariant fails the run. With -against an
// earlier build, each round measures both builds one after the other, and the report adds every
// figure as the median of the rounds' own ratios.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/fsctl/fsctl/benchmarks/internal/benchrun"
)

type options struct {
	fsctl, serverFsctl    string
	against               string // an earlier build run beside fsctl in every round; "" for none
	addr, postgres        string
	buyers, conns, shards int
	units                 []int
	wrkDuration           time.Duration
	wrkConns, repeat      int
	redisURL              string
	redisPIDs             []int // empty when Redis is not a local process; every master's on a cluster
	serveArgs             []string
	generatorCores        string // blast's and wrk's cores (taskset list); "" for any
	serverCores           string // fsctl serve's
	profiles              string // where each burst's generator CPU profile goes; "" for none
}

func main() {
	var o options
	var units, serveArgs string
	flag.StringVar(&o.fsctl, "fsctl", "bin/fsctl", "the fsctl binary to run")
	flag.StringVar(&o.serverFsctl, "server-fsctl", "", "the fsctl binary whose serve is measured (default: -fsctl); the generator stays -fsctl, so two servers can be compared under the same load")
	flag.StringVar(&o.against, "against", "", "an earlier fsctl binary to compare with: every round measures it and -fsctl one after the other (which goes first swaps each round), each as generator and server, and the report adds the median of the rounds' own ratios, -fsctl over it")
	flag.StringVar(&o.addr, "addr", "127.0.0.1:18080", "listen address of the server under test")
	postgres := benchrun.URLFlag("postgres-url", "FSCTL_POSTGRES_URL", benchrun.LocalPostgres, "PostgreSQL of the stack")
	redisURL := benchrun.URLFlag("redis-url", "FSCTL_REDIS_URL", "redis://127.0.0.1:16379/0", "Redis of the stack, one node or redis+cluster:// (its CPU, every master's, is measured when it runs on this machine); give fsctl serve the same with FSCTL_REDIS_URL")
	flag.IntVar(&o.buyers, "buyers", 50000, "buyers in each burst")
	flag.IntVar(&o.conns, "conns", 1000, "connections of blast's pool")
	flag.IntVar(&o.shards, "shards", 4, "stock shards of each item")
	flag.StringVar(&units, "units", "100,10000", "stock of the item of each burst, comma separated")
	flag.DurationVar(&o.wrkDuration, "wrk-duration", 5*time.Second, "length of each wrk run")
	flag.IntVar(&o.wrkConns, "wrk-conns", 64, "wrk's connections")
	flag.IntVar(&o.repeat, "repeat", 1, "rounds of the whole measurement; with more than one each figure is the median, with the rounds' range beside it")
	flag.StringVar(&o.profiles, "blast-profile", "", "a folder: each burst's blast writes its CPU profile there (blast-<units>-<unix seconds>.pprof), the server does not")
	flag.StringVar(&serveArgs, "serve-args", "", "extra flags for fsctl serve (space separated), e.g. '--redis-batch 0'")
	generatorCores := benchrun.CoresFlag("generator-cores", "run blast and wrk")
	serverCores := benchrun.CoresFlag("server-cores", "run fsctl serve")
	flag.Parse()
	o.generatorCores, o.serverCores = *generatorCores, *serverCores
	o.postgres, o.redisURL = postgres(), redisURL()
	for _, u := range strings.Split(units, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(u))
		if err != nil || n < 1 {
			fail(fmt.Errorf("-units %q: want positive counts", units))
		}
		o.units = append(o.units, n)
	}
	if o.repeat < 1 {
		fail(fmt.Errorf("-repeat %d: want at least 1", o.repeat))
	}
	o.serveArgs = strings.Fields(serveArgs)
	if o.against != "" && o.serverFsctl != "" {
		fail(errors.New("-against and -server-fsctl: give one; -against runs each build as generator and server"))
	}
	if o.serverFsctl == "" {
		o.serverFsctl = o.fsctl
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, o); err != nil {
		fail(err)
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "salebench:", err)
	os.Exit(1)
}

// burst is one measured release of buyers against one stock size.
type burst struct {
	units, sold          int
	lastSold, answered   time.Duration
	inPostgres           time.Duration // after the last answer
	rps                  float64
	serverCPU, redisCPU  time.Duration
	postgresCPU, boxCPU  time.Duration // PostgreSQL's processes; the whole machine's
	generatorCPU         time.Duration
	generatorBurstCPU    time.Duration // blast's own CPU from the release to the last answer
	serverRSS, generator int64         // KiB
	requests             int
}

func run(ctx context.Context, o options) error {
	if _, err := exec.LookPath("wrk"); err != nil {
		return errors.New("wrk is not installed (apt-get install wrk; `make bench-sale` does it)")
	}
	dir, err := os.MkdirTemp("", "salebench")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	defer benchrun.ResetSales(context.WithoutCancel(ctx)) // no holds left to expire into a later run
	o.redisPIDs = redisPIDs(ctx, o.redisURL)
	if o.against == "" {
		rounds, err := measureRounds(ctx, o, dir)
		if err != nil {
			return err
		}
		report(o, rounds)
		return nil
	}
	// Two builds: a round is one measurement of each, alternating single ones, so that both see the
	// same swings of a shared box; only the rounds' own ratios compare.
	type build struct {
		o      options
		rounds []round
	}
	was, now := &build{o: o}, &build{o: o}
	was.o.fsctl, was.o.serverFsctl = o.against, o.against
	was.o.repeat, now.o.repeat = 1, 1
	for i := range o.repeat {
		fmt.Printf("round %d of %d\n", i+1, o.repeat)
		order := []*build{was, now}
		if i%2 == 1 {
			order = []*build{now, was}
		}
		for _, b := range order {
			fmt.Printf("%s:\n", b.o.fsctl)
			r, err := measureRounds(ctx, b.o, dir)
			if err != nil {
				return err
			}
			b.rounds = append(b.rounds, r...)
		}
	}
	fmt.Printf("\n-against %s", o.against)
	report(o, was.rounds)
	fmt.Printf("\n-fsctl %s", o.fsctl)
	report(o, now.rounds)
	compare(o, was.rounds, now.rounds)
	return nil
}

// measureRounds starts o's server and measures it o.repeat times.
func measureRounds(ctx context.Context, o options, dir string) ([]round, error) {
	srv, err := benchrun.StartServer(ctx, o.serverFsctl, o.serverCores, o.addr, dir, o.serveArgs...)
	if err != nil {
		return nil, err
	}
	defer srv.Stop()
	base := "http://" + o.addr
	fmt.Printf("machine: %d cores, load %s; server pid %d on %s%s\n", runtime.NumCPU(), benchrun.Loadavg(), srv.Cmd.Process.Pid, base,
		benchrun.Pinning(map[string]string{"server": o.serverCores, "generator": o.generatorCores}))
	var rounds []round
	for i := range o.repeat {
		if o.repeat > 1 {
			fmt.Printf("round %d of %d\n", i+1, o.repeat)
		}
		r, err := measure(ctx, o, dir, base, srv.Cmd.Process.Pid)
		if err != nil {
			return nil, err
		}
		rounds = append(rounds, r)
	}
	return rounds, nil
}

// round is one measurement of everything: the ceiling, the sold-out path and each burst.
type round struct {
	ceiling, soldOut float64
	soldOutCPU       time.Duration // server CPU per sold-out request
	wrkCPU           time.Duration // wrk's own CPU per sold-out request: the generator's yardstick
	bursts           []burst
}

func measure(ctx context.Context, o options, dir, base string, pid int) (round, error) {
	var r round
	var err error
	ceiling, err := wrk(ctx, o, base+"/healthz", "", pid)
	if err != nil {
		return r, err
	}
	r.ceiling = ceiling.rps
	fmt.Printf("wrk -t2 -c%d -d%s /healthz: %.0f req/s (the ceiling)\n", o.wrkConns, o.wrkDuration, r.ceiling)
	soldOut, err := soldOutPath(ctx, o, dir, base, pid)
	if err != nil {
		return r, err
	}
	r.soldOut, r.wrkCPU, r.soldOutCPU = soldOut.rps, soldOut.cpuReq, soldOut.serverCPUReq
	fmt.Printf("wrk sold-out purchase, fresh key each request: %.0f req/s (%.2fx the ceiling), server CPU %.1f us a request, wrk's own CPU %.1f us a request\n",
		r.soldOut, r.soldOut/r.ceiling, us(r.soldOutCPU), us(r.wrkCPU))
	for _, u := range o.units {
		b, err := runBurst(ctx, o, dir, base, pid, u)
		if err != nil {
			return r, err
		}
		r.bursts = append(r.bursts, b)
	}
	return r, nil
}

// wrkRun is what one wrk run measured: its requests per second, its own CPU (user and system) per
// request, the load generator's cost that blast's is held to, and the server's CPU per request
// while wrk ran (what the server did to set the run up, such as the sold-out path's sale and its
// winner, is not in it).
type wrkRun struct {
	rps                  float64
	cpuReq, serverCPUReq time.Duration
}

// wrk runs wrk against url with an optional Lua script; pid is the server's.
func wrk(ctx context.Context, o options, url, script string, pid int) (wrkRun, error) {
	args := []string{"-t2", "-c" + strconv.Itoa(o.wrkConns), "-d" + o.wrkDuration.String()}
	if script != "" {
		args = append(args, "-s", script)
	}
	cmd := benchrun.Command(ctx, o.generatorCores, "wrk", append(args, url)...)
	server0, _ := benchrun.ProcCPU(pid)
	out, err := cmd.CombinedOutput()
	server1, _ := benchrun.ProcCPU(pid)
	if err != nil {
		return wrkRun{}, fmt.Errorf("wrk %s: %w\n%s", url, err, out)
	}
	if strings.Contains(string(out), "Non-2xx") && script == "" {
		return wrkRun{}, fmt.Errorf("wrk %s: error answers\n%s", url, out)
	}
	var r wrkRun
	rps, requests, err := benchrun.WrkCounts(out)
	if err != nil {
		return r, fmt.Errorf("wrk %s: %w", url, err)
	}
	r.rps = rps
	cpu := cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
	r.cpuReq = cpu / time.Duration(requests)
	r.serverCPUReq = (server1 - server0) / time.Duration(requests)
	return r, nil
}

// soldOutPath measures purchases of a sold-out item: the path 490,000 of 500,000 buyers take.
func soldOutPath(ctx context.Context, o options, dir, base string, pid int) (wrkRun, error) {
	path := "/api/v1/sales/bench-soldout/items/gone/purchase"
	if err := createSale(ctx, o, dir, "bench-soldout", "gone", 1); err != nil {
		return wrkRun{}, err
	}
	// A server that saw this item sold out in an earlier round drops its flag once its poller (every
	// 100 ms) reads the reloaded counter, and its read model (every 500 ms) the recreated sale.
	time.Sleep(time.Second)
	winner, err := token(ctx, o, "bench-winner")
	if err != nil {
		return wrkRun{}, err
	}
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, base+path, nil)
	req.Header.Set("Authorization", "Bearer "+winner)
	req.Header.Set("Idempotency-Key", "winner")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return wrkRun{}, err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		return wrkRun{}, fmt.Errorf("buying the only unit: %s", resp.Status)
	}
	tok, err := token(ctx, o, "bench-late-buyer")
	if err != nil {
		return wrkRun{}, err
	}
	script := filepath.Join(dir, "soldout.lua")
	if err := os.WriteFile(script, []byte(benchrun.WrkPurchaseScript(tok, path)), 0o600); err != nil {
		return wrkRun{}, err
	}
	return wrk(ctx, o, base+path, script, pid)
}

func token(ctx context.Context, o options, user string) (string, error) {
	out, err := exec.CommandContext(ctx, o.fsctl, "token", user).Output()
	if err != nil {
		return "", fmt.Errorf("fsctl token: %w", err)
	}
	return strings.TrimSpace(string(out)), nil
}

func createSale(ctx context.Context, o options, dir, id, item string, units int) error {
	return benchrun.CreateSale(ctx, o.fsctl, dir, id, item, units, o.shards)
}

// blastReport is the part of `fsctl blast -o json` this benchmark reads.
type blastReport struct {
	At         time.Time `json:"at"`
	Requests   int       `json:"requests"`
	Sold       int       `json:"sold"`
	DurationMs float64   `json:"durationMs"`
	Throughput float64   `json:"throughputRps"`
	CPU        struct {
		BurstMs float64 `json:"burstMs"`
	} `json:"cpu"`
	Outcomes []struct {
		Outcome string `json:"outcome"`
		Count   int    `json:"count"`
		Latency struct {
			MaxMs float64 `json:"maxMs"`
		} `json:"latency"`
	} `json:"outcomes"`
}

func runBurst(ctx context.Context, o options, dir, base string, pid, units int) (burst, error) {
	saleID := fmt.Sprintf("bench-%d", units)
	if err := createSale(ctx, o, dir, saleID, "drop", units); err != nil {
		return burst{}, err
	}
	fmt.Printf("burst: %d buyers -> %d units (%d shards)...\n", o.buyers, units, o.shards)
	cpu0, err := benchrun.ProcCPU(pid)
	if err != nil {
		return burst{}, err
	}
	rcpu0 := cpuOf(o.redisPIDs)
	pg0, box0 := cpuOf(postgresPIDs(ctx, o.postgres)), boxCPU()
	cmd := benchrun.Command(ctx, o.generatorCores, o.fsctl, "blast", "--target", base, "--sale", saleID, "--item", "drop",
		"--buyers", strconv.Itoa(o.buyers), "--conns", strconv.Itoa(o.conns), "--engine", "raw",
		"--in", "3s", "--expect-sold", strconv.Itoa(units), "-o", "json")
	if o.profiles != "" {
		cmd.Env = append(os.Environ(), fmt.Sprintf("FSCTL_CPUPROFILE=%s", filepath.Join(o.profiles, fmt.Sprintf("blast-%d-%d.pprof", units, time.Now().Unix()))))
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return burst{}, fmt.Errorf("fsctl blast: %w\n%s", err, stderr.String())
	}
	var r blastReport
	if err := json.Unmarshal(out, &r); err != nil {
		return burst{}, fmt.Errorf("read blast's report: %w", err)
	}
	lastAnswer := r.At.Add(time.Duration(r.DurationMs * float64(time.Millisecond)))
	inPG, err := benchrun.WaitPostgres(ctx, o.postgres, saleID, r.Sold)
	if err != nil {
		return burst{}, err
	}
	cpu1, err := benchrun.ProcCPU(pid)
	if err != nil {
		return burst{}, err
	}
	rcpu1 := cpuOf(o.redisPIDs)
	pg1, box1 := cpuOf(postgresPIDs(ctx, o.postgres)), boxCPU()
	b := burst{units: units, sold: r.Sold, requests: r.Requests, rps: r.Throughput,
		answered:   time.Duration(r.DurationMs * float64(time.Millisecond)),
		inPostgres: max(inPG.Sub(lastAnswer), 0), serverCPU: cpu1 - cpu0, redisCPU: grown(rcpu0, rcpu1),
		postgresCPU: grown(pg0, pg1), boxCPU: box1 - box0,
		serverRSS: procRSS(pid, "VmHWM"), generator: benchrun.MaxRSS(cmd.ProcessState),
		generatorCPU:      cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime(),
		generatorBurstCPU: time.Duration(r.CPU.BurstMs * float64(time.Millisecond))}
	for _, oc := range r.Outcomes {
		if oc.Outcome == "RESERVED" {
			b.lastSold = time.Duration(oc.Latency.MaxMs * float64(time.Millisecond))
		}
	}
	if out, err := exec.CommandContext(ctx, o.fsctl, "reconcile", "--sale", saleID).CombinedOutput(); err != nil {
		return burst{}, fmt.Errorf("fsctl reconcile --sale %s found a broken invariant: %w\n%s", saleID, err, out)
	}
	fmt.Printf("  every buyer answered in %.0f ms, %.0f req/s; CPU a request: server %.1f us, the box %.1f us\n",
		msf(b.answered), b.rps, perRequest(b.serverCPU, b), perRequest(b.boxCPU, b))
	return b, nil
}
