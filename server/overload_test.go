package server_test

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/fsctl/fsctl/internal/harness/testenv/eventually"
	"github.com/fsctl/fsctl/server"
)

// answered is how long a request may take before the test calls it hung. The bounds are
// generous on purpose (a 2-core box under -race): the tests judge outcomes, not speed.
const answered = 2 * time.Second

// rawConn is one client connection the test drives by hand, so it decides when to read, what
// to send and how slowly, and holds no goroutine of a client library.
type rawConn struct {
	t  *testing.T
	c  net.Conn
	br *bufio.Reader
}

func dialRaw(t *testing.T, base string) *rawConn {
	t.Helper()
	c, err := net.DialTimeout("tcp", strings.TrimPrefix(base, "http://"), answered)
	if err != nil {
		t.Fatalf("dial %s: %v", base, err)
	}
	t.Cleanup(func() { c.Close() })
	return &rawConn{t: t, c: c, br: bufio.NewReader(c)}
}

// do sends one request on the connection and reads its answer within the bound.
func (rc *rawConn) do(method, path string, headers ...string) (*http.Response, string) {
	rc.t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s HTTP/1.1\r\nHost: checkout\r\nContent-Length: 0\r\n", method, path)
	for _, h := range headers {
		b.WriteString(h + "\r\n")
	}
	b.WriteString("\r\n")
	_ = rc.c.SetDeadline(time.Now().Add(answered))
	defer rc.c.SetDeadline(time.Time{})
	if _, err := io.WriteString(rc.c, b.String()); err != nil {
		rc.t.Fatalf("%s %s: write: %v", method, path, err)
	}
	resp, err := http.ReadResponse(rc.br, nil)
	if err != nil {
		rc.t.Fatalf("%s %s: no answer within %s: %v", method, path, answered, err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		rc.t.Fatalf("%s %s: read body: %v", method, path, err)
	}
	return resp, string(body)
}

// closedByServer reports whether the server closed the connection within wait: a read ends in
// EOF or a reset rather than in the test's own deadline.
func (rc *rawConn) closedByServer(wait time.Duration) bool {
	_ = rc.c.SetReadDeadline(time.Now().Add(wait))
	_, err := io.Copy(io.Discard, rc.br)
	var ne net.Error
	return !(errors.As(err, &ne) && ne.Timeout())
}

// wantOverloaded checks a shed answer: 503, the OVERLOADED code, a Retry-After, and the
// connection closed after it.
func wantOverloaded(t *testing.T, resp *http.Response, body string) {
	t.Helper()
	var eb struct{ Error, Message string }
	_ = json.Unmarshal([]byte(body), &eb)
	if resp.StatusCode != http.StatusServiceUnavailable || eb.Error != "OVERLOADED" || resp.Header.Get("Retry-After") == "" || !resp.Close {
		t.Fatalf("beyond --max-conns: %d %s (Retry-After %q, Connection: close %v); want 503 OVERLOADED with Retry-After and Connection: close",
			resp.StatusCode, body, resp.Header.Get("Retry-After"), resp.Close)
	}
}

// quiesce drops the idle connections the env's own clients keep, and waits until the server
// holds only the one that asks.
func quiesce(t *testing.T, e *env) {
	t.Helper()
	e.client.CloseIdleConnections()
	http.DefaultClient.CloseIdleConnections()
	eventually.OK(t, 5*time.Second, func() error {
		rc := dialRaw(t, e.base)
		_, body := rc.do(http.MethodGet, "/metrics")
		rc.c.Close()
		if n := sumMetric(body, "fsctl_connections_admitted"); n != 1 {
			return fmt.Errorf("the server still holds %v connections besides the test's", n-1)
		}
		return nil
	})
}

// settled returns the goroutine count and the heap in use after a collection.
func settled() (goroutines int, heap uint64) {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return runtime.NumGoroutine(), ms.HeapInuse
}

// Twice --max-conns clients: the admitted ones keep being served, the rest hear 503 OVERLOADED
// at once instead of hanging in the accept queue, /healthz stays 200 on a new connection, those
// beyond even --shed-conns are closed at once, and goroutines and heap stay bounded and come
// back when the clients go.
func TestOverloadShedsBeyondMaxConns(t *testing.T) {
	const maxConns, shedConns, flood = 8, 4, 50
	e := newEnvWith(t, envOptions{Quantity: 100, Limit: 1, Tune: func(c *server.Config) {
		c.MaxConns, c.ShedConns = maxConns, shedConns
	}})
	quiesce(t, e)
	g0, heap0 := settled()

	held := make([]*rawConn, maxConns)
	for i := range held {
		held[i] = dialRaw(t, e.base)
		if resp, body := held[i].do(http.MethodGet, "/api/v1/sales/"+e.sale.ID); resp.StatusCode != http.StatusOK {
			t.Fatalf("admitted connection %d: %d %s", i, resp.StatusCode, body)
		}
	}
	for i := range maxConns {
		start := time.Now()
		rc := dialRaw(t, e.base)
		resp, body := rc.do(http.MethodPost, e.purchasePath(), "Authorization: Bearer "+e.token(fmt.Sprintf("shed-%d", i)), "Idempotency-Key: k")
		wantOverloaded(t, resp, body)
		if !rc.closedByServer(answered) {
			t.Fatal("a shed connection stayed open after its 503")
		}
		if i == 0 {
			t.Logf("a connection beyond --max-conns: 503 OVERLOADED and closed in %s", time.Since(start).Round(time.Microsecond))
		}
	}
	if resp, body := dialRaw(t, e.base).do(http.MethodGet, "/healthz"); resp.StatusCode != http.StatusOK {
		t.Fatalf("/healthz while saturated: %d %s; a liveness probe must not fail because the server is busy", resp.StatusCode, body)
	}
	for i, rc := range held {
		resp, body := rc.do(http.MethodPost, e.purchasePath(), "Authorization: Bearer "+e.token(fmt.Sprintf("held-%d", i)), "Idempotency-Key: k")
		if resp.StatusCode != http.StatusAccepted {
			t.Fatalf("purchase on admitted connection %d while saturated: %d %s", i, resp.StatusCode, body)
		}
	}

	// Silent clients fill the shed server's slots; every connection beyond them is closed at once.
	for range shedConns {
		dialRaw(t, e.base)
	}
	for i := range flood {
		if rc := dialRaw(t, e.base); !rc.closedByServer(answered) {
			t.Fatalf("connection %d beyond --max-conns and --shed-conns was not closed", i)
		}
	}
	g1, heap1 := settled()
	if g1 > g0+maxConns+shedConns+20 {
		t.Errorf("goroutines %d with %d admitted, %d shed and %d refused connections, from %d: more than the bounds allow", g1, maxConns, shedConns, flood, g0)
	}
	if heap1 > heap0+64<<20 {
		t.Errorf("heap in use %d MiB while saturated, from %d MiB", heap1>>20, heap0>>20)
	}
	t.Logf("saturated: %d goroutines (from %d), heap in use %d MiB (from %d MiB)", g1, g0, heap1>>20, heap0>>20)
	_, page := held[0].do(http.MethodGet, "/metrics")
	if n := sumMetric(page, "fsctl_connections_admitted"); n != maxConns {
		t.Errorf("fsctl_connections_admitted = %v, want %d", n, maxConns)
	}
	if answered, closed := shedCount(page, "answered"), shedCount(page, "closed"); answered < maxConns+1 || closed < flood {
		t.Errorf("fsctl_connections_shed_total: answered %v (want at least %d), closed %v (want at least %d)", answered, maxConns+1, closed, flood)
	}

	for _, rc := range held {
		rc.c.Close()
	}
	eventually.OK(t, 10*time.Second, func() error {
		g2, heap2 := settled()
		if g2 > g0+5 || heap2 > heap0+16<<20 {
			return fmt.Errorf("after the clients left: %d goroutines (from %d), heap %d MiB (from %d MiB)", g2, g0, heap2>>20, heap0>>20)
		}
		t.Logf("after the clients left: %d goroutines, heap in use %d MiB", g2, heap2>>20)
		return nil
	})
}

// shedCount reads one action of fsctl_connections_shed_total from a /metrics page.
func shedCount(page, action string) float64 {
	prefix := `fsctl_connections_shed_total{action="` + action + `"} `
	for line := range strings.Lines(page) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), prefix); ok {
			var f float64
			_, _ = fmt.Sscan(v, &f)
			return f
		}
	}
	return 0
}

// Slowloris clients that fill every slot are dropped after ReadHeaderTimeout; while they hold,
// a newcomer hears 503 at once, and once they are dropped it is served.
func TestSlowlorisDroppedAfterHeaderTimeout(t *testing.T) {
	// 2 s: on a busy box the server may take more than half a second to admit all four slowloris
	// clients (a probe is served meanwhile), and the probes wait up to half the timeout for that.
	const maxConns, headerTimeout = 4, 2 * time.Second
	e := newEnvWith(t, envOptions{Quantity: 10, Limit: 1, Tune: func(c *server.Config) {
		c.MaxConns, c.ShedConns, c.ReadHeaderTimeout = maxConns, 4, headerTimeout
	}})
	quiesce(t, e)
	slow := make([]*rawConn, maxConns)
	start := time.Now()
	for i := range slow {
		slow[i] = dialRaw(t, e.base)
		go trickle(slow[i].c, "GET /healthz HTTP/1.1\r\nHost: checkout\r\nX-Slow: "+strings.Repeat("a", 100))
	}
	// Every slowloris has been admitted once a probe hears OVERLOADED. On a busy box the server may
	// not have accepted them all yet when the first probe comes: a probe served meanwhile leaves at
	// once, giving its slot back, and the next one asks again, well within the header timeout.
	var resp *http.Response
	var body string
	for {
		time.Sleep(headerTimeout / 20)
		probe := dialRaw(t, e.base)
		resp, body = probe.do(http.MethodGet, "/api/v1/sales/"+e.sale.ID)
		probe.c.Close()
		if resp.StatusCode != http.StatusOK || time.Since(start) > headerTimeout/2 {
			break
		}
	}
	wantOverloaded(t, resp, body)
	for i, rc := range slow {
		if !rc.closedByServer(max(headerTimeout+3*time.Second-time.Since(start), time.Millisecond)) {
			t.Fatalf("slowloris %d still connected %s after it started; ReadHeaderTimeout is %s", i, time.Since(start).Round(time.Millisecond), headerTimeout)
		}
	}
	t.Logf("every slowloris dropped %s after it started (ReadHeaderTimeout %s)", time.Since(start).Round(time.Millisecond), headerTimeout)
	waitServed(t, e, "after the slowloris clients were dropped")
}

// waitServed waits until a new connection is admitted and served again: a slot came back.
func waitServed(t *testing.T, e *env, after string) {
	t.Helper()
	eventually.OK(t, 5*time.Second, func() error {
		if resp, body := dialRaw(t, e.base).do(http.MethodGet, "/api/v1/sales/"+e.sale.ID); resp.StatusCode != http.StatusOK {
			return fmt.Errorf("%s: %d %s; the slot was not given back", after, resp.StatusCode, body)
		}
		return nil
	})
}

// trickle writes s one byte every 100 ms until the connection fails.
func trickle(c net.Conn, s string) {
	for i := range len(s) {
		if _, err := c.Write([]byte{s[i]}); err != nil {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// A client that keeps asking and never reads its answers is cut by WriteTimeout, and its slot
// comes back: with one slot, a newcomer hears 503 while it holds and is served after.
func TestClientThatNeverReadsIsCut(t *testing.T) {
	const writeTimeout = time.Second
	e := newEnvWith(t, envOptions{Quantity: 10, Limit: 1, Tune: func(c *server.Config) {
		c.MaxConns, c.ShedConns, c.WriteTimeout = 1, 4, writeTimeout
	}})
	quiesce(t, e)
	// quiesce's own connection may not be given back yet when this one arrives (the server sees
	// its close a moment later), and then this one is the one shed: it asks once, and floods only
	// once admitted (the shed server answers /healthz too, so it asks for /metrics).
	var c net.Conn
	eventually.OK(t, 5*time.Second, func() error {
		rc := dialRaw(t, e.base)
		if resp, _ := rc.do(http.MethodGet, "/metrics"); resp.StatusCode != http.StatusOK {
			rc.c.Close()
			return errors.New("the single slot never came free for the non-reading client")
		}
		c = rc.c
		return nil
	})
	defer c.Close()
	_ = c.(*net.TCPConn).SetReadBuffer(1024) // the answers pile up in the server's socket, not ours
	start := time.Now()
	cut := make(chan error, 1)
	go func() {
		req := []byte("GET /metrics HTTP/1.1\r\nHost: checkout\r\n\r\n")
		for {
			if _, err := c.Write(req); err != nil {
				cut <- err
				return
			}
		}
	}()
	time.Sleep(200 * time.Millisecond)
	resp, body := dialRaw(t, e.base).do(http.MethodGet, "/api/v1/sales/"+e.sale.ID)
	wantOverloaded(t, resp, body)
	// ReadTimeout (10 s) and the old WriteTimeout (15 s) are both beyond this bound.
	select {
	case err := <-cut:
		t.Logf("the non-reading client was cut after %s: %v", time.Since(start).Round(time.Millisecond), err)
	case <-time.After(writeTimeout + 5*time.Second):
		t.Fatalf("a client that never reads still held its connection after %s; WriteTimeout is %s", time.Since(start).Round(time.Millisecond), writeTimeout)
	}
	waitServed(t, e, "after the non-reading client was cut")
}
