// Package benchrun is what the benchmark commands (salebench, scalebench) share: the server under
// test started and stopped, a sale created on it, its orders awaited in PostgreSQL, and the
// machine's and a process's figures.
package benchrun

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
)

// Server is a running `fsctl serve`.
type Server struct {
	Cmd  *exec.Cmd
	done chan error
}

// StartServer starts `fsctl serve --addr addr args...` (its log in dir/serve.log), on cores alone
// when set (see Command), and waits until /readyz answers 200.
func StartServer(ctx context.Context, fsctl, cores, addr, dir string, args ...string) (*Server, error) {
	logf, err := os.Create(filepath.Join(dir, "serve.log"))
	if err != nil {
		return nil, err
	}
	cmd := Command(ctx, cores, fsctl, append([]string{"serve", "--addr", addr}, args...)...)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s serve: %w", fsctl, err)
	}
	s := &Server{Cmd: cmd, done: make(chan error, 1)}
	go func() { s.done <- cmd.Wait(); logf.Close() }()
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case err := <-s.done:
			log, _ := os.ReadFile(filepath.Join(dir, "serve.log"))
			return nil, fmt.Errorf("fsctl serve exited (%v); is the stack up (make stack-up)?\n%s", err, log)
		case <-time.After(100 * time.Millisecond):
		}
		resp, err := http.Get("http://" + addr + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return s, nil
			}
		}
	}
	s.Stop()
	return nil, errors.New("fsctl serve not ready within 60s (see `make stack-up`)")
}

// Stop interrupts the server and kills it if it has not exited within 15 s.
func (s *Server) Stop() {
	_ = s.Cmd.Process.Signal(os.Interrupt)
	select {
	case <-s.done:
	case <-time.After(15 * time.Second):
		_ = s.Cmd.Process.Kill()
		<-s.done
	}
}

// CreateSale creates (or resets) sale id, open since 2026-01-01, with one item of units units over
// shards stock shards and a limit of one unit per buyer. ResetSales resets it again.
func CreateSale(ctx context.Context, fsctl, dir, id, item string, units, shards int) error {
	file := filepath.Join(dir, id+".yaml")
	body := fmt.Sprintf("id: %s\nname: %s\nopensAt: 2026-01-01T00:00:00Z\nperUserLimit: 1\nholdTTL: 10m\nitems:\n  - id: %s\n    name: %s\n    quantity: %d\n    priceCents: 100\n    shards: %d\n",
		id, id, item, item, units, shards)
	if err := os.WriteFile(file, []byte(body), 0o600); err != nil {
		return err
	}
	if out, err := exec.CommandContext(ctx, fsctl, "sale", "create", "-f", file, "--reset").CombinedOutput(); err != nil {
		return fmt.Errorf("fsctl sale create: %w\n%s", err, out)
	}
	created.Lock()
	defer created.Unlock()
	if created.sales == nil {
		created.sales = map[string]madeSale{}
	}
	created.sales[id] = madeSale{fsctl: fsctl, file: file}
	return nil
}

// created are the sales CreateSale made, by id.
var created struct {
	sync.Mutex
	sales map[string]madeSale
}

// madeSale is how a sale was made: by which fsctl, from which definition's file.
type madeSale struct{ fsctl, file string }

// ResetSales resets every sale CreateSale made (their definitions' files must still exist): a
// burst's unpaid holds, 10 minutes long, would otherwise expire into whatever runs next on the stack,
// a later benchmark whose server then spends its CPU releasing them. A failure is printed, not
// returned: it leaves the holds to expire, nothing worse.
func ResetSales(ctx context.Context) {
	created.Lock()
	defer created.Unlock()
	for id, made := range created.sales {
		if out, err := exec.CommandContext(ctx, made.fsctl, "sale", "create", "-f", made.file, "--reset").CombinedOutput(); err != nil {
			fmt.Fprintf(os.Stderr, "reset sale %s after the benchmark (its holds will expire later): %v\n%s", id, err, out)
		}
	}
	created.sales = nil
}

// WaitPostgres polls until PostgreSQL has want orders of the sale (for at most 2 minutes) and
// returns when it saw them.
func WaitPostgres(ctx context.Context, postgresURL, saleID string, want int) (time.Time, error) {
	conn, err := pgx.Connect(ctx, postgresURL)
	if err != nil {
		return time.Time{}, fmt.Errorf("postgres: %w", err)
	}
	defer conn.Close(ctx)
	deadline := time.Now().Add(2 * time.Minute)
	for {
		var n int
		if err := conn.QueryRow(ctx, "SELECT count(*) FROM orders WHERE sale_id = $1", saleID).Scan(&n); err != nil {
			return time.Time{}, fmt.Errorf("count orders: %w", err)
		}
		if n >= want {
			return time.Now(), nil
		}
		if time.Now().After(deadline) {
			return time.Time{}, fmt.Errorf("PostgreSQL has %d of %d orders of %s after 2 minutes", n, want, saleID)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// MaxRSS is an exited process's peak resident set, in KiB.
func MaxRSS(ps *os.ProcessState) int64 {
	if ru, ok := ps.SysUsage().(*syscall.Rusage); ok {
		return ru.Maxrss
	}
	return 0
}

// Loadavg is the first three fields of /proc/loadavg.
func Loadavg() string {
	b, _ := os.ReadFile("/proc/loadavg")
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}

// LocalPostgres is the PostgreSQL of the local stack (`fsctl stack up`).
const LocalPostgres = "postgres://fsctl@127.0.0.1:15432/fsctl?sslmode=disable"

// URLFlag defines the flag name for a connection URL and returns its value once the flags are
// parsed: the flag, else the environment variable env, else def. Its help names the variable
// rather than showing its value: a URL may carry a password.
func URLFlag(name, env, def, usage string) func() string {
	v := flag.String(name, "", fmt.Sprintf("%s (default $%s, else %s)", usage, env, def))
	return func() string { return cmp.Or(*v, os.Getenv(env), def) }
}

// CoresFlag defines the flag that puts one of the benchmark's processes (who) on cores of its own.
func CoresFlag(name, who string) *string {
	return flag.String(name, "", who+" on these cores alone, a taskset list such as 8-15 (empty: any core); on a machine with cores to spare, give the generator its own")
}

// Command is exec.CommandContext(ctx, name, args...), on cores alone when cores is set: through
// `taskset -c cores`, which execs the program, so its pid and resource usage are the program's.
func Command(ctx context.Context, cores, name string, args ...string) *exec.Cmd {
	if cores == "" {
		return exec.CommandContext(ctx, name, args...)
	}
	return exec.CommandContext(ctx, "taskset", append([]string{"-c", cores, name}, args...)...)
}

// Pinning describes which process runs on which cores (", server on cores 0-7, generator on cores
// 8-15"), or "" when none is pinned.
func Pinning(cores map[string]string) string {
	var b strings.Builder
	for _, who := range slices.Sorted(maps.Keys(cores)) {
		if cores[who] != "" {
			fmt.Fprintf(&b, ", %s on cores %s", who, cores[who])
		}
	}
	return b.String()
}

// WrkPurchaseScript is a wrk script that POSTs purchases to path ("" for the URL wrk is given) as
// the buyer of token, a fresh Idempotency-Key each (the thread's id and a counter): the sold-out
// path of `make bench-sale` and `make bench-floor`.
func WrkPurchaseScript(token, path string) string {
	if path == "" {
		path = "nil"
	} else {
		path = strconv.Quote(path)
	}
	return `
local n = 0
local id = 0
function setup(thread) id = id + 1; thread:set("tid", id) end
function init(args) tid = tid or 0 end
function request()
  n = n + 1
  wrk.headers["Idempotency-Key"] = "wrk-" .. tid .. "-" .. n
  wrk.headers["Authorization"] = "Bearer ` + token + `"
  return wrk.format("POST", ` + path + `)
end
`
}

var (
	wrkRPS  = regexp.MustCompile(`Requests/sec:\s+([0-9.]+)`)
	wrkDone = regexp.MustCompile(`(\d+) requests in `)
)

// WrkCounts reads the requests per second and the request count out of wrk's report; a report
// without them, or with no request made, is an error.
func WrkCounts(out []byte) (rps float64, requests int, err error) {
	m, n := wrkRPS.FindSubmatch(out), wrkDone.FindSubmatch(out)
	if m == nil || n == nil {
		return 0, 0, fmt.Errorf("no Requests/sec or request count in wrk's report:\n%s", out)
	}
	if rps, err = strconv.ParseFloat(string(m[1]), 64); err != nil {
		return 0, 0, err
	}
	if requests, err = strconv.Atoi(string(n[1])); err != nil || requests == 0 {
		return 0, 0, fmt.Errorf("wrk made %d requests (%v):\n%s", requests, err, out)
	}
	return rps, requests, nil
}

// ProcCPU is a process's user+system CPU time so far, from /proc (Linux); an error where the
// process is not one of this machine's.
func ProcCPU(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// Fields after the command name (which may hold spaces) start after the last ')'.
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	if len(f) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat: %d fields after the command, want 13 or more", pid, len(f))
	}
	utime, _ := strconv.ParseInt(f[11], 10, 64)
	stime, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(utime+stime) * 10 * time.Millisecond, nil // USER_HZ is 100 on Linux
}
