package gameday

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Fleet is the game day's checkout instances, each an `fsctl serve` process (so a fault can
// SIGKILL it), behind one round-robin proxy that buyers talk to, as a load balancer would front them.
type Fleet struct {
	bin    string
	args   []string // serve flags every instance gets
	logDir string
	note   func(format string, args ...any)

	// ctx ends at Close; the supervisor's restarts run under it.
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu      sync.Mutex
	closing bool
	exits   []string
	live    []*Instance
	all     []*Instance
	next    int
	seq     int
	proxy   *http.Server
	addr    string
}

// Instance is one `fsctl serve` process of the fleet.
type Instance struct {
	Name  string
	URL   string
	Armed int // exits on its own after this many reservations (FSCTL_FAULT_CRASH_AFTER_RESERVE)
	cmd   *exec.Cmd
	done  chan struct{}
	err   error
	// expected is set before the fleet itself stops the process (a kill fault, Close).
	expected bool
	log      string
}

// Done is closed when the process has exited.
func (in *Instance) Done() <-chan struct{} { return in.done }

// ExitCode is the process's exit status once Done (-1 when killed by a signal).
func (in *Instance) ExitCode() int {
	if in.cmd.ProcessState == nil {
		return 0
	}
	return in.cmd.ProcessState.ExitCode()
}

// PID is the process id.
func (in *Instance) PID() int { return in.cmd.Process.Pid }

func newFleet(bin string, args []string, logDir string, note func(string, ...any)) (*Fleet, error) {
	f := &Fleet{bin: bin, args: args, logDir: logDir, note: note}
	f.ctx, f.cancel = context.WithCancel(context.Background())
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	f.addr = ln.Addr().String()
	rp := &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			if in := f.pick(); in != nil {
				u, _ := url.Parse(in.URL)
				r.SetURL(u)
			}
		},
		Transport: &http.Transport{MaxIdleConnsPerHost: 256, IdleConnTimeout: 30 * time.Second, ResponseHeaderTimeout: 15 * time.Second},
		ErrorHandler: func(w http.ResponseWriter, _ *http.Request, err error) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadGateway)
			fmt.Fprintf(w, `{"error":"UPSTREAM_DOWN","message":%q}`, err.Error())
		},
	}
	f.proxy = &http.Server{Handler: rp, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = f.proxy.Serve(ln) }()
	return f, nil
}

// URL is the proxy's base URL, the one buyers use.
func (f *Fleet) URL() string { return "http://" + f.addr }

// pick returns the next live instance, round robin; nil when none runs.
func (f *Fleet) pick() *Instance {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.live) == 0 {
		return nil
	}
	f.next = (f.next + 1) % len(f.live)
	return f.live[f.next]
}

// Live returns the instances in rotation.
func (f *Fleet) Live() []*Instance {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]*Instance(nil), f.live...)
}

// URLs are the base URLs of the instances in rotation (for preflight).
func (f *Fleet) URLs() []string {
	var out []string
	for _, in := range f.Live() {
		out = append(out, in.URL)
	}
	return out
}

// Start starts one more instance, waits until it answers /readyz and puts it in rotation. With
// crashAfter > 0 it is armed to exit after that many fresh reservations, before their publish.
func (f *Fleet) Start(ctx context.Context, crashAfter int) (*Instance, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	f.mu.Lock()
	f.seq++
	name := fmt.Sprintf("server-%d", f.seq)
	f.mu.Unlock()
	in := &Instance{Name: name, URL: fmt.Sprintf("http://127.0.0.1:%d", port), Armed: crashAfter, done: make(chan struct{}),
		log: filepath.Join(f.logDir, name+".log")}
	logFile, err := os.OpenFile(in.log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	defer logFile.Close()
	args := append([]string{"serve", "--addr", fmt.Sprintf("127.0.0.1:%d", port)}, f.args...)
	in.cmd = exec.Command(f.bin, args...)
	in.cmd.Stdout, in.cmd.Stderr = logFile, logFile
	in.cmd.Env = os.Environ()
	if crashAfter > 0 {
		in.cmd.Env = append(in.cmd.Env, fmt.Sprintf("FSCTL_FAULT_CRASH_AFTER_RESERVE=%d", crashAfter))
	}
	// Its own process group keeps the terminal's Ctrl-C away from it (the runner stops it, in
	// order); the parent-death signal ends it should the runner itself be killed.
	in.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := in.cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", f.bin, err)
	}
	f.mu.Lock()
	f.all = append(f.all, in)
	f.mu.Unlock()
	go func() {
		in.err = in.cmd.Wait()
		f.remove(in)
		close(in.done)
	}()
	if err := waitHTTP(ctx, in, 60*time.Second); err != nil {
		in.expected = true
		_ = in.cmd.Process.Kill()
		<-in.done
		return nil, fmt.Errorf("%s did not get ready: %w (log %s)", name, err, logFile.Name())
	}
	f.mu.Lock()
	f.live = append(f.live, in)
	f.mu.Unlock()
	f.wg.Add(1)
	go f.supervise(in)
	f.note("%s started (pid %d, %s)", name, in.PID(), in.URL)
	return in, nil
}

func (f *Fleet) remove(in *Instance) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for i, x := range f.live {
		if x == in {
			f.live = append(f.live[:i], f.live[i+1:]...)
			return
		}
	}
}

// Kill SIGKILLs one live, unarmed instance picked with rng (never the last one standing) and
// waits for it to be gone.
func (f *Fleet) Kill(rng func(n int) int) (*Instance, error) {
	var cands []*Instance
	for _, in := range f.Live() {
		if in.Armed == 0 {
			cands = append(cands, in)
		}
	}
	if len(cands) < 2 {
		return nil, fmt.Errorf("kill a server: %d unarmed instance(s) in rotation; need 2 so one survives", len(cands))
	}
	in := cands[rng(len(cands))]
	f.remove(in) // out of rotation first, as a load balancer's failed health check would
	f.mu.Lock()
	in.expected = true
	f.mu.Unlock()
	if err := in.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		return in, fmt.Errorf("kill %s (pid %d): %w", in.Name, in.PID(), err)
	}
	<-in.done
	return in, nil
}

// Close stops every instance (SIGTERM, SIGKILL after grace) and the proxy; it returns once all
// processes are gone.
func (f *Fleet) Close(grace time.Duration) {
	f.mu.Lock()
	f.closing = true
	all := append([]*Instance(nil), f.all...)
	for _, in := range all {
		in.expected = true
	}
	f.live = nil
	f.mu.Unlock()
	f.cancel()
	f.wg.Wait()
	f.mu.Lock()
	all = append([]*Instance(nil), f.all...)
	f.mu.Unlock()
	for _, in := range all {
		select {
		case <-in.done:
			continue
		default:
		}
		_ = in.cmd.Process.Signal(syscall.SIGTERM)
	}
	deadline := time.After(grace)
	for _, in := range all {
		select {
		case <-in.done:
		case <-deadline:
			_ = in.cmd.Process.Kill()
			<-in.done
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_ = f.proxy.Shutdown(ctx)
	_ = f.proxy.Close()
}

// supervise plays the orchestrator: an instance that exits on its own (not killed by a fault, not
// armed to crash) is noted with the last line of its log and replaced, as Kubernetes would restart
// the pod, retrying every second while it cannot start (e.g. while Kafka is down).
func (f *Fleet) supervise(in *Instance) {
	defer f.wg.Done()
	select {
	case <-in.done:
	case <-f.ctx.Done():
		return
	}
	f.mu.Lock()
	expected := in.expected || f.closing
	f.mu.Unlock()
	if expected || in.Armed > 0 {
		return
	}
	msg := fmt.Sprintf("%s (pid %d) exited on its own, status %d: %s", in.Name, in.PID(), in.ExitCode(), lastLine(in.log))
	f.mu.Lock()
	f.exits = append(f.exits, msg)
	f.mu.Unlock()
	f.note("%s; restarting it", msg)
	for attempt := 1; ; attempt++ {
		if sleep(f.ctx, time.Second) != nil {
			return
		}
		n, err := f.Start(f.ctx, 0)
		if err == nil {
			f.note("%s replaces %s (attempt %d)", n.Name, in.Name, attempt)
			return
		}
		if f.ctx.Err() != nil {
			return
		}
	}
}

// Exits are the instances that exited on their own, one line each.
func (f *Fleet) Exits() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.exits...)
}

func lastLine(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return "(no log)"
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	return clip(lines[len(lines)-1], 200)
}

// PIDs lists every process the fleet started that still runs (for the teardown test).
func (f *Fleet) PIDs() []int {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []int
	for _, in := range f.all {
		select {
		case <-in.done:
		default:
			out = append(out, in.PID())
		}
	}
	return out
}

func waitHTTP(ctx context.Context, in *Instance, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	client := &http.Client{Timeout: 2 * time.Second}
	var last error
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, in.URL+"/readyz", nil)
		resp, err := client.Do(req)
		if err == nil {
			body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			last = fmt.Errorf("readyz %d: %s", resp.StatusCode, body)
		} else {
			last = err
		}
		select {
		case <-in.done:
			return fmt.Errorf("exited (%v) before it was ready", in.err)
		case <-ctx.Done():
			return fmt.Errorf("%w: %v", ctx.Err(), last)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	_, p, _ := net.SplitHostPort(ln.Addr().String())
	return strconv.Atoi(p)
}

// seeded is a goroutine-safe random source from the scenario's seed.
type seeded struct {
	mu sync.Mutex
	r  *rand.Rand
}

func newSeeded(seed uint64) *seeded {
	return &seeded{r: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))}
}

// IntN is a uniform int in [0, n).
func (s *seeded) IntN(n int) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.r.IntN(n)
}

// Dur is a uniform duration in [0, d].
func (s *seeded) Dur(d time.Duration) time.Duration {
	if d <= 0 {
		return 0
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return time.Duration(s.r.Int64N(int64(d) + 1))
}
