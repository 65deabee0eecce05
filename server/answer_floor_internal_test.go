package server

import (
	"bytes"
	"io"
	"net"
	"net/http"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/fsctl/fsctl/internal/contract/outcome"
)

// BenchmarkAnswerWithoutSocket is net/http's server and writeJSON answering sold out, on one
// connection that sends b.N purchases back to back and drops the answers: no socket, no kernel,
// so what it measures is the user-space part of the floor under the sold-out path (make
// bench-floor's http row, over loopback, adds the read and write system calls and the
// scheduling around them). docs/benchmarks.md, round two, thirteenth part.
func BenchmarkAnswerWithoutSocket(b *testing.B) {
	body := errorBody{Error: outcome.SoldOut, Message: "item sold out"}
	c := &replayConn{req: []byte("POST /api/v1/sales/s/items/i/purchase HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer t\r\nIdempotency-Key: k\r\n\r\n"), closed: make(chan struct{})}
	c.left = b.N * len(c.req)
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusGone, body)
	})}
	b.ReportAllocs()
	cpu0 := CPUTime()
	b.ResetTimer()
	go func() { _ = srv.Serve(&oneConnListener{c: c, closed: c.closed}) }()
	<-c.closed
	b.StopTimer()
	b.ReportMetric(float64(CPUTime()-cpu0)/float64(b.N), "cpu-ns/op")
	_ = srv.Close()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.answers != b.N {
		b.Fatalf("%d answers to %d requests", c.answers, b.N)
	}
}

// CPUTime is the CPU time (user and system, every thread) this process has used, in nanoseconds:
// the benchmarks' cpu-ns/op.
func CPUTime() int64 {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return ru.Utime.Nano() + ru.Stime.Nano()
}

// replayConn is a client connection that sends req over and over, left bytes in all, and counts
// the answers written back by their status lines.
type replayConn struct {
	mu      sync.Mutex
	req     []byte
	off     int // into req
	left    int
	answers int
	once    sync.Once
	closed  chan struct{}
}

func (c *replayConn) Read(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.left == 0 {
		return 0, io.EOF
	}
	n := 0
	for n < len(p) && c.left > 0 {
		m := copy(p[n:min(len(p), n+c.left)], c.req[c.off:])
		n, c.left, c.off = n+m, c.left-m, (c.off+m)%len(c.req)
	}
	return n, nil
}

func (c *replayConn) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.answers += bytes.Count(p, []byte("HTTP/1.1 "))
	return len(p), nil
}

func (c *replayConn) Close() error                     { c.once.Do(func() { close(c.closed) }); return nil }
func (c *replayConn) LocalAddr() net.Addr              { return &net.TCPAddr{} }
func (c *replayConn) RemoteAddr() net.Addr             { return &net.TCPAddr{} }
func (c *replayConn) SetDeadline(time.Time) error      { return nil }
func (c *replayConn) SetReadDeadline(time.Time) error  { return nil }
func (c *replayConn) SetWriteDeadline(time.Time) error { return nil }

// oneConnListener hands out c once, then waits until closed.
type oneConnListener struct {
	c      net.Conn
	once   sync.Once
	closed chan struct{}
}

func (l *oneConnListener) Accept() (net.Conn, error) {
	var c net.Conn
	l.once.Do(func() { c = l.c })
	if c != nil {
		return c, nil
	}
	<-l.closed
	return nil, net.ErrClosed
}

func (l *oneConnListener) Close() error   { return nil }
func (l *oneConnListener) Addr() net.Addr { return &net.TCPAddr{} }
