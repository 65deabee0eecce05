// Package faultnet is a TCP proxy that puts network faults between clients and one service:
// latency added to every chunk in each direction, and partitions. A partition stops every byte
// both ways, on open connections and new ones, without closing anything, as a switch that drops
// packets does: clients time out instead of failing fast, and when it heals the bytes that waited
// flow again (TCP would have retransmitted them) unless a client gave up on its connection.
//
// A game day puts one in front of Redis and one in front of PostgreSQL for the checkout instances
// (network faults net-delay and net-partition). Kafka is not proxied: its clients connect to the
// addresses its brokers advertise, which would go around a proxy.
package faultnet

import (
	"errors"
	"net"
	"sync"
	"time"
)

// Proxy forwards every connection accepted on its address to the upstream address.
type Proxy struct {
	ln       net.Listener
	upstream string

	mu      sync.Mutex
	latency time.Duration
	cut     chan struct{} // closed while traffic flows; a fresh, open one while partitioned
	conns   map[net.Conn]struct{}
	closed  bool
	wg      sync.WaitGroup
}

// Listen starts a proxy on addr (e.g. 127.0.0.1:0) to upstream.
func Listen(addr, upstream string) (*Proxy, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	flowing := make(chan struct{})
	close(flowing)
	p := &Proxy{ln: ln, upstream: upstream, cut: flowing, conns: map[net.Conn]struct{}{}}
	p.wg.Add(1)
	go p.accept()
	return p, nil
}

// Addr is the address clients dial instead of the upstream's.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Upstream is the service's own address.
func (p *Proxy) Upstream() string { return p.upstream }

// SetLatency delays every chunk forwarded, each way, by d (0: none).
func (p *Proxy) SetLatency(d time.Duration) {
	p.mu.Lock()
	p.latency = max(d, 0)
	p.mu.Unlock()
}

// Partition stops all traffic, both ways, until Heal; connections stay open.
func (p *Proxy) Partition() {
	p.mu.Lock()
	defer p.mu.Unlock()
	select {
	case <-p.cut:
		p.cut = make(chan struct{})
	default: // already partitioned
	}
}

// Heal lets traffic flow again.
func (p *Proxy) Heal() {
	p.mu.Lock()
	defer p.mu.Unlock()
	select {
	case <-p.cut:
	default:
		close(p.cut)
	}
}

// Partitioned reports whether traffic is stopped.
func (p *Proxy) Partitioned() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	select {
	case <-p.cut:
		return false
	default:
		return true
	}
}

// Close stops accepting, closes every connection and waits for the forwarding to end.
func (p *Proxy) Close() error {
	p.mu.Lock()
	p.closed = true
	for c := range p.conns {
		_ = c.Close()
	}
	p.mu.Unlock()
	p.Heal() // wake whatever waits for the partition to end
	err := p.ln.Close()
	p.wg.Wait()
	return err
}

// gate waits while the proxy is partitioned and returns the latency to add; false once closed.
func (p *Proxy) gate() (time.Duration, bool) {
	for {
		p.mu.Lock()
		cut, latency, closed := p.cut, p.latency, p.closed
		p.mu.Unlock()
		if closed {
			return 0, false
		}
		select {
		case <-cut:
			return latency, true
		default:
		}
		<-cut
	}
}

func (p *Proxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		_ = c.Close()
		return false
	}
	p.conns[c] = struct{}{}
	return true
}

func (p *Proxy) untrack(c net.Conn) {
	p.mu.Lock()
	delete(p.conns, c)
	p.mu.Unlock()
	_ = c.Close()
}

func (p *Proxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			time.Sleep(10 * time.Millisecond)
			continue
		}
		if !p.track(c) {
			return
		}
		p.wg.Add(1)
		go p.serve(c)
	}
}

// serve connects one client to the upstream, once the network lets it, and forwards both ways.
func (p *Proxy) serve(client net.Conn) {
	defer p.wg.Done()
	defer p.untrack(client)
	if _, ok := p.gate(); !ok {
		return
	}
	up, err := net.DialTimeout("tcp", p.upstream, 5*time.Second)
	if err != nil {
		return // the client sees its connection closed, as a refused one upstream would look
	}
	if !p.track(up) {
		return
	}
	defer p.untrack(up)
	done := make(chan struct{}, 2)
	go func() { p.copy(up, client); done <- struct{}{} }()
	go func() { p.copy(client, up); done <- struct{}{} }()
	<-done // one side ended: end both
}

// copy forwards src to dst chunk by chunk, each chunk after the gate (partition, latency).
func (p *Proxy) copy(dst, src net.Conn) {
	defer func() { _ = dst.Close(); _ = src.Close() }()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			latency, ok := p.gate()
			if !ok {
				return
			}
			if latency > 0 {
				time.Sleep(latency)
			}
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil { // EOF or a broken connection: the other side ends too
			return
		}
	}
}
