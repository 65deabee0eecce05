package server

import (
	"errors"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/fsctl/fsctl/internal/contract/outcome"
)

// The shed server's limits: it answers one short request per connection and must never be where a
// slow or silent client parks.
const (
	shedTimeout        = 2 * time.Second
	shedMaxHeaderBytes = 4 << 10
)

// admission splits the accepted connections three ways: up to max go to the checkout's own
// http.Server; up to shed more go to a small server that answers 503 OVERLOADED (and /healthz
// 200); beyond both a connection is closed at once. A connection waiting in the kernel's accept
// queue instead (netutil.LimitListener) hangs its buyer with no answer until a slot frees; a quick
// 503 lets the client back off and a load balancer move it elsewhere.
//
// No goroutine waits per connection: Accept sorts each one as it arrives, and the shed server's
// listener is a buffered channel no longer than its bound.
type admission struct {
	inner net.Listener
	// admitted and shedding are semaphores: a slot is held from Accept until the conn's Close.
	admitted chan struct{}
	shedding chan struct{}
	// toShed carries the connections to shed to the shed server's Accept; its capacity is the
	// shed bound, so a send while holding a shedding slot never blocks.
	toShed  chan net.Conn
	closed  chan struct{}
	once    sync.Once
	counted *prometheus.CounterVec
}

func newAdmission(inner net.Listener, max, shed int, counted *prometheus.CounterVec) *admission {
	return &admission{
		inner: inner, admitted: make(chan struct{}, max), shedding: make(chan struct{}, shed),
		toShed: make(chan net.Conn, shed), closed: make(chan struct{}), counted: counted,
	}
}

// Accept returns the next connection the checkout may serve; it hands the others to the shed
// server or closes them.
func (a *admission) Accept() (net.Conn, error) {
	for {
		c, err := a.inner.Accept()
		if err != nil {
			return nil, err
		}
		select {
		case a.admitted <- struct{}{}:
			return &slotConn{Conn: c, free: a.admitted}, nil
		default:
		}
		select {
		case a.shedding <- struct{}{}:
			a.counted.WithLabelValues("answered").Inc()
			a.toShed <- &slotConn{Conn: c, free: a.shedding}
		default:
			a.counted.WithLabelValues("closed").Inc()
			_ = c.Close()
		}
	}
}

// Close closes the real listener and ends the shed server's Accept.
func (a *admission) Close() error {
	a.stopShed()
	return a.inner.Close()
}

// stopShed ends the shed server's Accept and closes the connections still waiting for it.
func (a *admission) stopShed() {
	a.once.Do(func() { close(a.closed) })
	for {
		select {
		case c := <-a.toShed:
			_ = c.Close()
		default:
			return
		}
	}
}

// Addr is the real listener's address.
func (a *admission) Addr() net.Addr { return a.inner.Addr() }

// open is how many connections the checkout's own server holds now.
func (a *admission) open() int { return len(a.admitted) }

// shedListener is the shed server's side of an admission.
type shedListener struct{ a *admission }

func (l shedListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.a.toShed:
		return c, nil
	case <-l.a.closed:
		return nil, net.ErrClosed
	}
}

// Close stops only the shed side: the real listener is the checkout server's to close.
func (l shedListener) Close() error   { l.a.stopShed(); return nil }
func (l shedListener) Addr() net.Addr { return l.a.Addr() }

// slotConn gives its admission slot back when it is closed, once.
type slotConn struct {
	net.Conn
	free chan struct{}
	once sync.Once
}

func (c *slotConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() { <-c.free })
	return err
}

// shedServer answers every request on a connection beyond --max-conns with 503 OVERLOADED and
// closes it, except GET /healthz: a liveness probe opens a new connection each time, and a busy
// instance is alive, so it must not be restarted for being busy.
func (s *Server) shedServer() *http.Server {
	hs := &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method == http.MethodGet && r.URL.Path == "/healthz" {
				writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
				return
			}
			s.writeCode(w, outcome.Overloaded, "this server is at its connection limit; retry shortly")
		}),
		ReadHeaderTimeout: shedTimeout,
		ReadTimeout:       shedTimeout,
		WriteTimeout:      shedTimeout,
		MaxHeaderBytes:    shedMaxHeaderBytes,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelDebug),
	}
	// One answer per connection: Connection: close on every response, so a shed client comes back
	// through admission instead of staying on the shed server.
	hs.SetKeepAlivesEnabled(false)
	return hs
}

// serveShed runs the shed server on a's overflow until a closes, over TLS when the checkout
// serves TLS (a TLS client would read a plain 503 as garbage).
func (s *Server) serveShed(hs *http.Server, a *admission) {
	serve := hs.Serve
	if hs.TLSConfig != nil {
		serve = func(l net.Listener) error { return hs.ServeTLS(l, "", "") }
	}
	if err := serve(shedListener{a}); err != nil && !errors.Is(err, http.ErrServerClosed) && !errors.Is(err, net.ErrClosed) {
		s.log.Warn("shed server stopped", "err", err)
	}
}
