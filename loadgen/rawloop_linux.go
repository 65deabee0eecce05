//go:build linux

package loadgen

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"runtime"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// A burst's lanes are driven by event loops, one a core, each over its share of the connections
// with epoll, as wrk drives its own: a loop parks and wakes for whatever its connections have
// ready, not a goroutine per answer, and a socket is read when epoll says it has bytes, not once
// more to learn that it has none. In a 50,000-buyer burst the goroutine-per-lane engine spent 13%
// of its CPU in the scheduler and made 1.7 reads an answer, half of them EAGAIN
// (docs/benchmarks.md). A schedule's clicks fall due one by one and keep the goroutine lanes.

// eventLoops is true where the raw engine drives a burst on event loops.
const eventLoops = true

// loopSweep is how often a loop looks for answers past their timeout, and how long it stays
// parked at most, so a cancel or a redial is seen within it.
const loopSweep = 10 * time.Millisecond

// loopIn is the first size of a connection's read buffer; it grows when one answer is larger.
const loopIn = 16 << 10

// startLoops hands the lanes' connections to event loops, which settle every click once release
// is closed; wait returns when they are done.
func (p Plan) startLoops(ctx context.Context, addr string, lanes []*lane, recs []Record, release <-chan struct{}) (wait func(), err error) {
	n := min(runtime.GOMAXPROCS(0), len(lanes))
	loops := make([]*eventLoop, n)
	for i := range loops {
		lp, err := newEventLoop(&p, ctx, addr, recs)
		if err != nil {
			for _, l := range loops[:i] {
				l.close()
			}
			return nil, err
		}
		loops[i] = lp
	}
	for i, l := range lanes {
		lp := loops[i%n]
		lc := &loopConn{lane: l, fd: -1, slot: len(lp.conns)}
		lp.conns = append(lp.conns, lc)
		err := lp.adopt(lc, l.conn)
		l.conn = nil
		if err != nil {
			for _, lp := range loops {
				lp.close()
			}
			return nil, err
		}
	}
	var wg sync.WaitGroup
	for _, lp := range loops {
		lp.redialed = make(chan redial, len(lp.conns)) // a dialler never waits on the loop
		wg.Go(func() {
			defer lp.close()
			<-release
			lp.run()
		})
	}
	return wg.Wait, nil
}

// eventLoop drives its connections from one goroutine.
type eventLoop struct {
	p        *Plan
	ctx      context.Context
	addr     string
	recs     []Record
	ep       int
	epoll    *os.File        // ep, in Go's poller: the loop parks there, not in epoll_wait
	waitEp   syscall.RawConn // epoll's, to wait on it
	conns    []*loopConn
	live     int // connections with clicks left to settle
	redialed chan redial
	dialing  int
	br       *bufio.Reader
	src      inSource
	iov      [][]byte
	events   [256]unix.EpollEvent
	due      time.Time // the next sweep
	expiry   time.Time // no answer owed can pass its timeout before this (expire's answer)
	deadline time.Time // the epoll's read deadline, as last set
}

// loopConn is one lane on a loop: the cursors over its clicks and the bytes read but not parsed.
type loopConn struct {
	*lane
	slot     int
	fd       int
	local    string
	head     int // the first click not settled
	next     int // the first click not fully written
	off      int // bytes of wire[next] written
	stamped  int // clicks stamped with this connection's start
	in       []byte
	eof      bool
	werr     error // the write that failed; the reads go on to what the server answered
	redialed bool
	memo     answerMemo
}

// redial is a fresh connection for a lane whose connection failed, or why there is none.
type redial struct {
	c     *loopConn
	fd    int
	local string
	err   error
	cause error // why the connection before it was given up on
}

// newEventLoop is a loop with an epoll of its own, non-blocking and itself watched by Go's poller:
// the loop waits for it as a goroutine waits for a socket, parked, where a blocking epoll_wait
// would hand its core's scheduler to another thread each time (the first build did: twice the
// futex and nanosleep calls, and more CPU than the goroutine lanes).
func newEventLoop(p *Plan, ctx context.Context, addr string, recs []Record) (*eventLoop, error) {
	ep, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("epoll: %w", err)
	}
	if err := unix.SetNonblock(ep, true); err != nil {
		unix.Close(ep)
		return nil, fmt.Errorf("epoll: %w", err)
	}
	lp := &eventLoop{p: p, ctx: ctx, addr: addr, recs: recs, ep: ep, epoll: os.NewFile(uintptr(ep), "epoll")}
	if lp.waitEp, err = lp.epoll.SyscallConn(); err != nil {
		lp.epoll.Close()
		return nil, fmt.Errorf("epoll: %w", err)
	}
	return lp, nil
}

// wait returns the connections' events, parked until there are some or the sweep is due (the
// deadline moves once a sweep, not once a wait: a timer's reset each time was a cost of its own).
func (lp *eventLoop) wait() (int, error) {
	if !lp.due.Equal(lp.deadline) {
		lp.deadline = lp.due
		_ = lp.epoll.SetReadDeadline(lp.due)
	}
	var n int
	var werr error
	err := lp.waitEp.Read(func(fd uintptr) bool {
		n, werr = unix.EpollWait(int(fd), lp.events[:], 0)
		return n != 0 || werr != nil && !errors.Is(werr, unix.EINTR)
	})
	switch {
	case errors.Is(err, os.ErrDeadlineExceeded):
		return 0, nil
	case err != nil:
		return 0, err
	case werr != nil:
		return 0, werr
	}
	return n, nil
}

// adopt takes conn's socket for the loop (a duplicate, non-blocking; conn is closed) and watches it.
func (lp *eventLoop) adopt(c *loopConn, conn net.Conn) error {
	fd, local, err := detach(conn)
	if err != nil {
		return err
	}
	c.fd, c.local = fd, local
	return lp.watch(c)
}

// watch adds c's socket to the loop's epoll, edge-triggered.
func (lp *eventLoop) watch(c *loopConn) error {
	fd := c.fd
	ev := unix.EpollEvent{Events: unix.EPOLLIN | unix.EPOLLOUT | unix.EPOLLRDHUP | unix.EPOLLET, Fd: int32(c.slot)}
	if err := unix.EpollCtl(lp.ep, unix.EPOLL_CTL_ADD, fd, &ev); err != nil {
		unix.Close(fd)
		c.fd = -1
		return fmt.Errorf("epoll: %w", err)
	}
	return nil
}

// detach duplicates conn's socket for the loop's own use and closes conn, which takes the socket
// out of Go's poller.
func detach(conn net.Conn) (int, string, error) {
	defer conn.Close()
	local := conn.LocalAddr().String()
	tcp, ok := conn.(*net.TCPConn)
	if !ok {
		return -1, "", fmt.Errorf("%s: not a TCP connection", local)
	}
	raw, err := tcp.SyscallConn()
	if err != nil {
		return -1, "", err
	}
	fd := -1
	var derr error
	if err := raw.Control(func(s uintptr) { fd, derr = unix.FcntlInt(s, unix.F_DUPFD_CLOEXEC, 0) }); err != nil {
		return -1, "", err
	}
	if derr != nil {
		return -1, "", fmt.Errorf("dup %s: %w", local, derr)
	}
	if err := unix.SetNonblock(fd, true); err != nil {
		unix.Close(fd)
		return -1, "", err
	}
	return fd, local, nil
}

func (lp *eventLoop) close() {
	for _, c := range lp.conns {
		if c.fd >= 0 {
			unix.Close(c.fd)
			c.fd = -1
		}
	}
	for lp.dialing > 0 { // a dial still out: its connection is closed, not leaked
		if r := <-lp.redialed; r.err == nil {
			unix.Close(r.fd)
		}
		lp.dialing--
	}
	lp.epoll.Close()
}

// run writes every connection's share at once and then serves epoll until every click is settled.
func (lp *eventLoop) run() {
	lp.br = bufio.NewReaderSize(&lp.src, 16<<10)
	if err := lp.ctx.Err(); err != nil {
		lp.cancel(err)
		return
	}
	for _, c := range lp.conns {
		if len(c.idx) > 0 {
			lp.live++
			lp.flush(c)
		}
	}
	lp.due = time.Now().Add(loopSweep)
	for lp.live > 0 {
		if err := lp.ctx.Err(); err != nil {
			lp.cancel(err)
			return
		}
		n, err := lp.wait()
		if err != nil {
			lp.cancel(fmt.Errorf("epoll: %w", err))
			return
		}
		for _, ev := range lp.events[:n] {
			c := lp.conns[ev.Fd]
			if c.fd < 0 || c.head == len(c.idx) {
				continue
			}
			if ev.Events&(unix.EPOLLIN|unix.EPOLLRDHUP|unix.EPOLLHUP|unix.EPOLLERR) != 0 {
				lp.read(c, ev.Events&(unix.EPOLLRDHUP|unix.EPOLLHUP|unix.EPOLLERR) != 0)
			}
			if c.fd >= 0 && c.head < len(c.idx) {
				lp.flush(c)
			}
		}
		lp.takeRedials()
		if now := time.Now(); !now.Before(lp.due) {
			lp.due = now.Add(loopSweep)
			if at := lp.p.now(); !at.Before(lp.expiry) {
				lp.expiry = lp.expire(at)
			}
		}
	}
}

// flush writes what c's window allows, as much as the socket takes.
func (lp *eventLoop) flush(c *loopConn) {
	for c.werr == nil && c.next < len(c.idx) && c.next-c.head < rawWindow {
		end := min(len(c.idx), c.head+rawWindow, c.next+1024) // IOV_MAX
		lp.iov = appendWire(append(lp.iov[:0], c.wire[c.next][c.off:]), c.wire[c.next+1:end]...)
		start := lp.p.now()
		for k := max(c.stamped, c.next); k < end; k++ {
			r := &lp.recs[c.idx[k]]
			r.Started, r.Conn, r.Written = start, c.local, time.Time{}
		}
		c.stamped = max(c.stamped, end)
		n, err := unix.Writev(c.fd, lp.iov)
		if errors.Is(err, unix.EAGAIN) {
			return // epoll says when it takes more
		}
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			c.werr = fmt.Errorf("write: write tcp %s->%s: %w", c.local, lp.addr, os.NewSyscallError("writev", err))
			if c.head >= c.next { // no answer is owed: nothing more will come
				lp.broken(c, c.werr)
			}
			return
		}
		written, full := lp.p.now(), n
		for c.next < end && n > 0 {
			left := len(c.wire[c.next]) - c.off
			if n < left {
				c.off += n
				break
			}
			n -= left
			lp.recs[c.idx[c.next]].Written = written
			c.next, c.off = c.next+1, 0
		}
		if full < iovLen(lp.iov) {
			return // the socket's buffer is full: epoll says when it drains
		}
	}
}

func iovLen(iov [][]byte) int {
	n := 0
	for _, b := range iov {
		n += len(b)
	}
	return n
}

// read takes what the socket has and settles the answers it completes. A short read means the
// socket is drained, unless the peer has also hung up (ended): then the end, which came with the
// same edge, is read too.
func (lp *eventLoop) read(c *loopConn, ended bool) {
	var rerr error
	for !c.eof {
		if len(c.in) == cap(c.in) {
			c.in = append(c.in, make([]byte, max(loopIn, cap(c.in)))...)[:len(c.in)]
		}
		space := cap(c.in) - len(c.in)
		// syscall's Read, not unix's: the race detector then sees the server's write (through
		// syscall.Write) happen before it, as it does for net's reads.
		n, err := syscall.Read(c.fd, c.in[len(c.in):cap(c.in)])
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if errors.Is(err, unix.EAGAIN) {
			break
		}
		if err != nil {
			rerr = fmt.Errorf("read tcp %s->%s: %w", c.local, lp.addr, os.NewSyscallError("read", err))
			break
		}
		if n == 0 {
			c.eof = true
			break
		}
		c.in = c.in[:len(c.in)+n]
		if n < space && !ended {
			break // drained: epoll says when more comes
		}
	}
	if !lp.parse(c) {
		return
	}
	switch {
	case rerr != nil:
		lp.broken(c, rerr)
	case c.werr != nil && c.head >= c.next && c.head < len(c.idx):
		lp.broken(c, c.werr) // every answer owed is in; the rest never went out
	case c.eof && c.head < len(c.idx):
		lp.broken(c, io.EOF) // parse settled all it could: what is left was never answered
	}
}

// parse settles the answers c.in holds whole, in order, and keeps the rest for the next read; it
// is false when it gave up on the connection (garbage, or the server closing it).
func (lp *eventLoop) parse(c *loopConn) bool {
	lp.src = inSource{b: c.in, eof: c.eof}
	lp.br.Reset(&lp.src)
	consumed, now := 0, lp.p.now()
	for c.head < len(c.idx) && consumed < len(c.in) {
		r := &lp.recs[c.idx[c.head]]
		if r.FirstByte.IsZero() {
			r.FirstByte = now
		}
		a, err := readRawAnswer(lp.br, &c.memo.buf)
		if errors.Is(err, errIncomplete) {
			break // the rest of it is still on its way
		}
		consumed = lp.src.pos - lp.br.Buffered()
		if err != nil {
			if a.headed || !unanswered(err) { // the server has the request: no resend
				r.Done = now
				r.failed(err)
				lp.settle(c)
			}
			lp.broken(c, err)
			return false
		}
		lp.p.record(r, a, &c.memo, now)
		lp.settle(c)
		if a.close {
			lp.broken(c, errServerClosed)
			return false
		}
	}
	c.in = c.in[:copy(c.in, c.in[consumed:])]
	return true
}

// settle counts c's first unsettled click, whose record is complete.
func (lp *eventLoop) settle(c *loopConn) {
	r := &lp.recs[c.idx[c.head]]
	c.head++
	if c.next < c.head { // answered before it was all written: nothing of it is left to send
		c.next, c.off = c.head, 0
	}
	lp.p.settled(1)
	if lp.p.Settled != nil {
		lp.p.Settled(r)
	}
	if c.head == len(c.idx) {
		lp.live--
	}
}

// broken gives up on c's connection: the first time it dials again, off the loop, to resend what
// was never answered (the same keys: the server's idempotency makes the resend safe); after that
// what is left fails with err.
func (lp *eventLoop) broken(c *loopConn, err error) {
	if c.fd >= 0 {
		unix.Close(c.fd) // its only descriptor: epoll forgets it
		c.fd = -1
	}
	if c.head == len(c.idx) {
		return
	}
	if c.werr != nil && errors.Is(err, io.EOF) {
		err = c.werr // the write failed first
	}
	if c.redialed || lp.ctx.Err() != nil {
		lp.failRest(c, err)
		return
	}
	c.redialed = true
	lp.dialing++
	go func() {
		d := lp.p.dialer()
		r := redial{c: c, cause: err}
		conn, derr := d.DialContext(lp.ctx, "tcp", lp.addr)
		if r.err = derr; derr == nil {
			r.fd, r.local, r.err = detach(conn)
		}
		lp.redialed <- r
	}()
}

// takeRedials puts the connections dialled since the last look to work.
func (lp *eventLoop) takeRedials() {
	for lp.dialing > 0 {
		var r redial
		select {
		case r = <-lp.redialed:
		default:
			return
		}
		lp.dialing--
		c := r.c
		if r.err != nil {
			lp.failRest(c, fmt.Errorf("%w; redial: %w", r.cause, r.err))
			continue
		}
		c.fd, c.local = r.fd, r.local
		c.next, c.off, c.stamped, c.in, c.eof, c.werr = c.head, 0, c.head, c.in[:0], false, nil
		if err := lp.watch(c); err != nil {
			lp.failRest(c, fmt.Errorf("%w; redial: %w", r.cause, err))
			continue
		}
		lp.flush(c)
	}
}

// failRest records every click c has left as a transport error.
func (lp *eventLoop) failRest(c *loopConn, err error) {
	done := lp.p.now()
	msg := err.Error()
	for c.head < len(c.idx) {
		r := &lp.recs[c.idx[c.head]]
		r.Done, r.Outcome, r.Error = done, TransportError, msg
		lp.settle(c)
	}
}

// expire times out each connection whose first unanswered click has waited past the plan's
// timeout since it was written (or since its write began, when the socket never took it all),
// and says when to look again: no click can time out before the earliest of the waiting first
// clicks' starts plus the timeout, since a connection stamps its clicks in order and a click
// stamped later starts after now. Looking every sweep instead visited every connection's first
// click a hundred times a second, a cache miss each (3% of blast's CPU in a 10,000-unit burst).
func (lp *eventLoop) expire(now time.Time) time.Time {
	if lp.p.Timeout <= 0 {
		return now.Add(time.Hour) // nothing times out; any answer will do
	}
	next := now.Add(lp.p.Timeout)
	for _, c := range lp.conns {
		if c.fd < 0 || c.head == len(c.idx) || c.stamped <= c.head {
			continue
		}
		r := &lp.recs[c.idx[c.head]]
		since := r.Written
		if since.IsZero() {
			since = r.Started
		}
		if now.Sub(since) < lp.p.Timeout {
			if at := r.Started.Add(lp.p.Timeout); at.Before(next) {
				next = at
			}
			continue
		}
		err := fmt.Errorf("read tcp %s->%s: %w", c.local, lp.addr, os.ErrDeadlineExceeded)
		r.Done = now
		r.failed(err)
		lp.settle(c)
		lp.broken(c, err)
	}
	return next
}

// cancel ends the run: every click not settled is a transport error with err.
func (lp *eventLoop) cancel(err error) {
	for _, c := range lp.conns {
		lp.failRest(c, err)
	}
}

// errIncomplete is inSource's word that the bytes read so far end inside an answer.
var errIncomplete = errors.New("answer incomplete")

// inSource reads a connection's unparsed bytes: at their end it says errIncomplete, or io.EOF
// once the connection has ended.
type inSource struct {
	b   []byte
	pos int
	eof bool
}

func (s *inSource) Read(p []byte) (int, error) {
	if s.pos == len(s.b) {
		if s.eof {
			return 0, io.EOF
		}
		return 0, errIncomplete
	}
	n := copy(p, s.b[s.pos:])
	s.pos += n
	return n, nil
}
