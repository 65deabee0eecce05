// Command floorbench measures the floors under the sold-out purchase's server CPU: what a request
// costs a Go server on this box before fsctl's own code runs. It serves, in its own process, the
// same sold-out answer (410 and its JSON body) to wrk's purchases (a fresh Idempotency-Key each,
// a bearer token, the same script as `make bench-sale`) in four ways, from least to most work:
//
//	http     net/http alone: the answer, nothing else
//	redis    plus one EVALSHA through go-redis per request, one request a connection of its pool
//	batched  plus one EVALSHA per request, batched into pipelines as fsctl serve batches them
//	         (internal/checkout/groupcommit, 128 a pipeline, two lanes)
//	reserve  plus fsctl's own reserve on a sold-out item of 4 shards instead of the bare EVALSHA:
//	         stock.Store.Reserve on the buyer's home shard (the sold-out flag's verify mode)
//
// and prints its own CPU (user + system) per request in each, round after round. fsctl serve's
// figure on the same path (`make bench-sale`) minus "reserve" is what the rest of the purchase
// costs: token, lookups, limits, deadline, metrics, the answer's encoding.
//
// The fasthttp modes ask what the same answer costs when the connections are served by
// github.com/valyala/fasthttp instead of net/http (on a listener of their own), the question
// under any server that would leave net/http:
//
//	fasthttp           fasthttp alone, the answer
//	fasthttp-reserve   plus fsctl's reserve, written for fasthttp
//	fasthttp-deadline  the same behind fasthttp's TimeoutWithCodeHandler (6 s): a goroutine and a
//	                   timer a request, the price of answering at a deadline while the work goes on
//	fasthttp-adaptor   the net/http handler's reserve through the library's fasthttpadaptor
//	fasthttp-shim      the net/http handler's reserve through a synchronous shim (fastShim below):
//	                   what keeping net/http's handler types on fasthttp's connections costs
//
// Only the modes asked for are run (-modes; by default net/http's four):
//
//	go run ./benchmarks/floorbench -rounds 3
//	go run ./benchmarks/floorbench -modes http,reserve,fasthttp,fasthttp-reserve,fasthttp-shim
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"
	"github.com/valyala/fasthttp"
	"github.com/valyala/fasthttp/fasthttpadaptor"

	"github.com/fsctl/fsctl/benchmarks/internal/benchrun"
	"github.com/fsctl/fsctl/internal/checkout/groupcommit"
	"github.com/fsctl/fsctl/internal/checkout/stock"
	"github.com/fsctl/fsctl/internal/contract/outcome"
	"github.com/fsctl/fsctl/internal/contract/sale"
	"github.com/fsctl/fsctl/internal/platform/redisconn"
)

var modes = []string{"http", "redis", "batched", "reserve",
	"fasthttp", "fasthttp-reserve", "fasthttp-deadline", "fasthttp-adaptor", "fasthttp-shim"}

// netModes run by default: the floors under fsctl serve as it is built, on net/http.
var netModes = modes[:4]

// soldOutBody is the size and shape of fsctl serve's SOLD_OUT answer.
var soldOutBody = []byte(`{"code":"SOLD_OUT","message":"item gone of sale floor is sold out","retryable":false}` + "\n")

// floorScript is the bare script call: one key read, as light as a script gets.
var floorScript = redis.NewScript(`return redis.call('GET', KEYS[1])`)

type options struct {
	rounds   int
	duration time.Duration
	conns    int
	cores    string
	modes    []string
	redisURL string
}

func main() {
	var o options
	var only string
	flag.IntVar(&o.rounds, "rounds", 3, "rounds; each runs every mode once, one after the other")
	flag.DurationVar(&o.duration, "duration", 5*time.Second, "length of each measured wrk run (a 1 s warm-up run comes first)")
	flag.IntVar(&o.conns, "conns", 64, "wrk's connections (two threads, as `make bench-sale`)")
	flag.StringVar(&only, "modes", strings.Join(netModes, ","), "the modes to run, comma separated: "+strings.Join(modes, ", "))
	redisURL := benchrun.URLFlag("redis-url", "FSCTL_REDIS_URL", "redis://127.0.0.1:16379/0", "Redis the script calls go to (one node or redis+cluster://)")
	cores := benchrun.CoresFlag("generator-cores", "run wrk")
	flag.Parse()
	o.redisURL, o.cores = redisURL(), *cores
	for _, m := range strings.Split(only, ",") {
		if m = strings.TrimSpace(m); !slices.Contains(modes, m) {
			fail(fmt.Errorf("-modes: %q is not one of %s", m, strings.Join(modes, ", ")))
		}
		o.modes = append(o.modes, strings.TrimSpace(m))
	}
	if o.rounds < 1 || o.duration <= 0 || o.conns < 2 {
		fail(errors.New("-rounds, -duration and -conns must be positive (at least 2 connections)"))
	}
	if err := run(o); err != nil {
		fail(err)
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "floorbench:", err)
	os.Exit(1)
}

func run(o options) error {
	ctx := context.Background()
	if _, err := exec.LookPath("wrk"); err != nil {
		return errors.New("wrk is not installed: apt-get install wrk (make bench-sale installs it)")
	}
	raddr, err := redisconn.Parse(o.redisURL)
	if err != nil {
		return err
	}
	rdb := raddr.Open(redisconn.Tune{PoolSize: 256})
	defer rdb.Close()
	f, err := newFloor(ctx, rdb)
	if err != nil {
		return err
	}
	defer f.close()

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: f, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	defer srv.Close()
	dir, err := os.MkdirTemp("", "floorbench")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	script := filepath.Join(dir, "purchase.lua")
	if err := os.WriteFile(script, []byte(benchrun.WrkPurchaseScript(strings.Repeat("x", 180), "")), 0o600); err != nil {
		return err
	}
	base, fbase := "http://"+ln.Addr().String(), ""
	if slices.ContainsFunc(o.modes, fastMode) { // its listener only when a mode asks for it
		if fbase, err = f.serveFastHTTP(); err != nil {
			return err
		}
	}
	fmt.Printf("floorbench: %d CPUs, GOMAXPROCS %d, load %s; wrk -t2 -c%d -d%s per mode and round\n",
		runtime.NumCPU(), runtime.GOMAXPROCS(0), benchrun.Loadavg(), o.conns, o.duration)
	results := map[string][]float64{}
	for r := 1; r <= o.rounds; r++ {
		for _, m := range o.modes {
			at := base
			if fastMode(m) {
				at = fbase
			}
			us, rps, err := measure(ctx, o, at+"/"+m, script)
			if err != nil {
				return fmt.Errorf("%s: %w", m, err)
			}
			if err := f.lastErr(); err != nil {
				return fmt.Errorf("%s: a request failed: %w", m, err)
			}
			results[m] = append(results[m], us)
			fmt.Printf("round %d %-17s %8.0f req/s  server CPU %5.1f us a request\n", r, m, rps, us)
		}
	}
	fmt.Println("\nserver CPU per request (median of the rounds; the rounds):")
	for _, m := range o.modes {
		v := slices.Clone(results[m])
		slices.Sort(v)
		fmt.Printf("  %-17s %5.1f us  %s\n", m, v[len(v)/2], join(results[m]))
	}
	return nil
}

// measure warms the path up, then runs wrk on it and returns this process's CPU per request.
func measure(ctx context.Context, o options, url, script string) (us, rps float64, err error) {
	args := []string{"-t2", "-c" + strconv.Itoa(o.conns), "-s", script}
	if out, err := benchrun.Command(ctx, o.cores, "wrk", append(args, "-d1s", url)...).CombinedOutput(); err != nil {
		return 0, 0, fmt.Errorf("wrk: %w\n%s", err, out)
	}
	before := selfCPU()
	out, err := benchrun.Command(ctx, o.cores, "wrk", append(args, "-d"+o.duration.String(), url)...).CombinedOutput()
	cpu := selfCPU() - before
	if err != nil {
		return 0, 0, fmt.Errorf("wrk: %w\n%s", err, out)
	}
	rps, requests, err := benchrun.WrkCounts(out)
	if err != nil {
		return 0, 0, err
	}
	return float64(cpu.Nanoseconds()) / 1e3 / float64(requests), rps, nil
}

func selfCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru) // wrk is a child: not counted
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func join(v []float64) string {
	s := make([]string, len(v))
	for i, x := range v {
		s[i] = strconv.FormatFloat(x, 'f', 1, 64)
	}
	return strings.Join(s, " · ")
}

// floor serves the four modes.
type floor struct {
	rdb   redis.UniversalClient
	q     *groupcommit.Queue[*call]
	st    *stock.Store
	sl    sale.Sale
	errs  chan error
	shard string
}

type call struct {
	cmd  *redis.Cmd
	done chan struct{}
}

func newFloor(ctx context.Context, rdb redis.UniversalClient) (*floor, error) {
	if err := redisconn.Check(ctx, rdb); err != nil {
		return nil, fmt.Errorf("redis: %w (start the local stack with `bin/fsctl stack up`, or give -redis-url)", err)
	}
	if err := floorScript.Load(ctx, rdb).Err(); err != nil {
		return nil, fmt.Errorf("load the floor's script: %w", err)
	}
	f := &floor{rdb: rdb, errs: make(chan error, 1),
		st: stock.New(rdb, stock.Batch(stock.DefaultBatchMax, stock.DefaultBatchLanes)),
		sl: sale.Sale{ID: fmt.Sprintf("floorbench-%d", time.Now().UnixNano()), OpensAt: time.Now().Add(-time.Minute),
			PerUserLimit: 1, HoldTTL: 10 * time.Minute,
			Items: []sale.Item{{ID: "gone", Name: "gone", Quantity: 0, Shards: 4}}}}
	f.shard = "{" + f.sl.ID + "}:floor"
	f.q = groupcommit.New(stock.DefaultBatchMax, stock.DefaultBatchLanes, f.exec)
	if err := f.st.LoadScripts(ctx); err != nil {
		return nil, err
	}
	if _, err := f.st.Preload(ctx, f.sl, nil); err != nil {
		return nil, fmt.Errorf("preload the sold-out item: %w", err)
	}
	return f, nil
}

// close deletes the sale's keys (the idempotency records of every reserve included).
func (f *floor) close() {
	if err := f.st.Reset(context.Background(), f.sl); err != nil {
		fmt.Fprintln(os.Stderr, "floorbench: delete the sale's keys:", err)
	}
}

func (f *floor) exec(batch []*call) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	p := f.rdb.Pipeline()
	for _, c := range batch {
		_ = p.Process(ctx, c.cmd)
	}
	_, _ = p.Exec(ctx)
	for _, c := range batch {
		c.done <- struct{}{}
	}
}

func (f *floor) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	key := r.Header.Get("Idempotency-Key")
	// As fsctl serve's reserve, the calls run on their own clock: wrk hanging up at the end of a
	// run does not cut them.
	ctx := context.WithoutCancel(r.Context())
	var err error
	switch r.URL.Path {
	case "/http":
	case "/redis":
		err = floorScript.EvalSha(ctx, f.rdb, []string{f.shard}, key).Err()
	case "/batched":
		c := &call{cmd: redis.NewCmd(ctx, "evalsha", floorScript.Hash(), 1, f.shard, key), done: make(chan struct{}, 1)}
		f.q.Add(c)
		<-c.done
		err = c.cmd.Err()
	case "/reserve", "/fasthttp-adaptor", "/fasthttp-shim": // the last two reach it through fasthttp
		err = f.reserve(ctx, key)
	default:
		http.NotFound(w, r)
		return
	}
	if f.failed(err) {
		w.WriteHeader(http.StatusServiceUnavailable)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusGone)
	_, _ = w.Write(soldOutBody)
}

// reserve is fsctl serve's reserve of a flagged sold-out item: a new order id, the script on the
// buyer's home shard.
func (f *floor) reserve(ctx context.Context, key string) error {
	id, err := uuid.NewV7()
	if err != nil {
		return err
	}
	rv, err := f.st.Reserve(ctx, stock.Request{SaleID: f.sl.ID, ItemID: "gone", UserID: "floor-buyer", IdemKey: key,
		OrderID: id, Shards: 4, NoBorrow: true})
	if err == nil && rv.Outcome != outcome.SoldOut {
		err = fmt.Errorf("the sold-out item answered %s", rv.Outcome)
	}
	return err
}

// failed keeps err for lastErr, unless it is none (redis.Nil is the bare script's empty answer).
func (f *floor) failed(err error) bool {
	if err == nil || errors.Is(err, redis.Nil) {
		return false
	}
	select {
	case f.errs <- err:
	default:
	}
	return true
}

// lastErr reports a request that failed since the last call.
func (f *floor) lastErr() error {
	select {
	case err := <-f.errs:
		return err
	default:
		return nil
	}
}

// fastMode says whether mode m is served by fasthttp.
func fastMode(m string) bool { return strings.HasPrefix(m, "fasthttp") }

// serveFastHTTP serves the fasthttp modes on a listener of their own, until the process ends, and
// returns its base URL.
func (f *floor) serveFastHTTP() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	srv := &fasthttp.Server{Handler: f.fastRoutes(), ReadTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	return "http://" + ln.Addr().String(), nil
}

// fastRoutes serves the fasthttp modes.
func (f *floor) fastRoutes() fasthttp.RequestHandler {
	adaptor := fasthttpadaptor.NewFastHTTPHandler(f)
	deadline := fasthttp.TimeoutWithCodeHandler(f.serveFast, 6*time.Second, "late", http.StatusServiceUnavailable)
	return func(c *fasthttp.RequestCtx) {
		switch string(c.Path()) {
		case "/fasthttp", "/fasthttp-reserve":
			f.serveFast(c)
		case "/fasthttp-deadline":
			deadline(c)
		case "/fasthttp-adaptor":
			adaptor(c)
		case "/fasthttp-shim":
			fastShim(c, f)
		default:
			c.SetStatusCode(http.StatusNotFound)
		}
	}
}

// serveFast is ServeHTTP written for fasthttp.
func (f *floor) serveFast(c *fasthttp.RequestCtx) {
	if string(c.Path()) != "/fasthttp" && f.failed(f.reserve(context.Background(), string(c.Request.Header.Peek("Idempotency-Key")))) {
		c.SetStatusCode(http.StatusServiceUnavailable)
		return
	}
	c.SetContentType("application/json")
	c.SetStatusCode(http.StatusGone)
	_, _ = c.Write(soldOutBody)
}

// fastShim serves one fasthttp request with a net/http handler on the same goroutine: a Request
// with the path, the headers and no body, and a ResponseWriter that fills fasthttp's response.
// Enough for the floor's handler, not a general adaptor (no body, no Flush, no Hijack).
func fastShim(c *fasthttp.RequestCtx, h http.Handler) {
	r := &http.Request{Method: string(c.Method()), URL: &url.URL{Path: string(c.Path())},
		Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1, Header: make(http.Header, 4), Body: http.NoBody,
		Host: string(c.Host()), RemoteAddr: c.RemoteAddr().String()}
	for k, v := range c.Request.Header.All() {
		r.Header.Add(string(k), string(v))
	}
	h.ServeHTTP(&shimWriter{c: c, h: make(http.Header, 2)}, r.WithContext(context.Background()))
}

type shimWriter struct {
	c     *fasthttp.RequestCtx
	h     http.Header
	wrote bool
}

func (w *shimWriter) Header() http.Header { return w.h }

func (w *shimWriter) WriteHeader(code int) {
	if w.wrote {
		return
	}
	w.wrote = true
	for k, v := range w.h {
		for _, x := range v {
			w.c.Response.Header.Add(k, x)
		}
	}
	w.c.SetStatusCode(code)
}

func (w *shimWriter) Write(p []byte) (int, error) {
	w.WriteHeader(http.StatusOK)
	return w.c.Write(p)
}
