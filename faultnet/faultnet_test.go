package faultnet

import (
	"bufio"
	"errors"
	"io"
	"net"
	"os"
	"testing"
	"time"
)

// echo is an upstream that sends every line back.
func echo(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { defer c.Close(); _, _ = io.Copy(c, c) }()
		}
	}()
	return ln.Addr().String()
}

func proxy(t *testing.T) *Proxy {
	t.Helper()
	p, err := Listen("127.0.0.1:0", echo(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

// roundTrip writes a line and reads it back within limit.
func roundTrip(c net.Conn, r *bufio.Reader, limit time.Duration) (time.Duration, error) {
	begin := time.Now()
	if _, err := c.Write([]byte("ping\n")); err != nil {
		return 0, err
	}
	_ = c.SetReadDeadline(time.Now().Add(limit))
	line, err := r.ReadString('\n')
	if err == nil && line != "ping\n" {
		err = errors.New("got " + line)
	}
	return time.Since(begin), err
}

func dial(t *testing.T, p *Proxy) (net.Conn, *bufio.Reader) {
	t.Helper()
	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c, bufio.NewReader(c)
}

func TestForwardsAndDelays(t *testing.T) {
	p := proxy(t)
	c, r := dial(t, p)
	if _, err := roundTrip(c, r, 2*time.Second); err != nil {
		t.Fatalf("through the proxy: %v", err)
	}
	p.SetLatency(100 * time.Millisecond)
	took, err := roundTrip(c, r, 2*time.Second)
	if err != nil || took < 200*time.Millisecond {
		t.Errorf("with 100ms each way: %s, %v; want at least 200ms", took, err)
	}
	p.SetLatency(0)
	if took, err := roundTrip(c, r, 2*time.Second); err != nil || took > 150*time.Millisecond {
		t.Errorf("latency removed: %s, %v", took, err)
	}
}

// A partition stops the bytes without closing the connection: the client times out, and after
// the heal what waited arrives. A connection opened during the partition reaches the upstream only
// after the heal.
func TestPartitionStopsTrafficUntilHealed(t *testing.T) {
	p := proxy(t)
	c, r := dial(t, p)
	p.Partition()
	if !p.Partitioned() {
		t.Fatal("Partitioned() = false after Partition")
	}
	if _, err := roundTrip(c, r, 300*time.Millisecond); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("during the partition: err %v, want a timeout", err)
	}
	late, lr := dial(t, p)
	if _, err := roundTrip(late, lr, 300*time.Millisecond); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("a new connection during the partition: err %v, want a timeout", err)
	}
	p.Heal()
	_ = c.SetReadDeadline(time.Now().Add(2 * time.Second))
	if line, err := r.ReadString('\n'); err != nil || line != "ping\n" {
		t.Fatalf("after the heal the waiting bytes did not arrive: %q, %v", line, err)
	}
	_ = late.SetReadDeadline(time.Now().Add(2 * time.Second))
	if line, err := lr.ReadString('\n'); err != nil || line != "ping\n" {
		t.Fatalf("the connection opened during the partition: %q, %v", line, err)
	}
	if _, err := roundTrip(c, r, 2*time.Second); err != nil {
		t.Errorf("after the heal: %v", err)
	}
}

// Close ends every connection, partitioned or not, and returns once forwarding stopped.
func TestCloseEndsEverything(t *testing.T) {
	p, err := Listen("127.0.0.1:0", echo(t))
	if err != nil {
		t.Fatal(err)
	}
	c, r := dial(t, p)
	if _, err := roundTrip(c, r, 2*time.Second); err != nil {
		t.Fatal(err)
	}
	p.Partition()
	_, _ = c.Write([]byte("stuck\n"))
	done := make(chan error, 1)
	go func() { done <- p.Close() }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not return while partitioned")
	}
	_ = c.SetReadDeadline(time.Now().Add(2 * time.Second))
	if _, err := r.ReadString('\n'); err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
		t.Errorf("client read after Close: %v, want the connection closed", err)
	}
	if _, err := net.DialTimeout("tcp", p.Addr(), time.Second); err == nil {
		t.Error("the proxy still accepts after Close")
	}
}

// An upstream that is gone: the client's connection is closed, as a refused one would be.
func TestUpstreamDown(t *testing.T) {
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	addr := ln.Addr().String()
	ln.Close()
	p, err := Listen("127.0.0.1:0", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	c, r := dial(t, p)
	if _, err := roundTrip(c, r, 2*time.Second); err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
		t.Errorf("upstream down: %v, want the connection closed", err)
	}
}
