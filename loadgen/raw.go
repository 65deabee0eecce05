package loadgen

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/fsctl/fsctl/internal/contract/outcome"
	"github.com/fsctl/fsctl/internal/target/profile"
)

// Engines a plan can send its requests with.
const (
	// EngineHTTP sends every click through net/http's client: every journey, retries and replays.
	EngineHTTP = "http"
	// EngineRaw writes pre-serialized HTTP/1.1 purchases, pipelined, over raw keep-alive TCP
	// connections and parses the answers in order: the fastest release, the direct purchase only.
	EngineRaw = "raw"
)

// rawWindow is how many requests a raw connection keeps unanswered: it bounds what a failing
// connection has to resend and what the server's receive buffer holds (about half a MB), and
// still lets one write carry a connection's whole share of a 500,000-buyer burst over 1,000
// connections. A window of 64 held 500,000 buyers back until others were answered: the last of
// them went out 3 s after the release instead of 0.24-0.8 s (2-core box, trivial endpoint).
const rawWindow = 1024

// rawSupported refuses what the raw engine cannot do, naming the engine that can.
func (p Plan) rawSupported() error {
	u, err := url.Parse(p.BaseURL)
	switch {
	case err != nil:
		return fmt.Errorf("target %q: %w", p.BaseURL, err)
	case u.Scheme != "http" || u.Host == "":
		return fmt.Errorf("target %s: the raw engine speaks plain HTTP/1.1 to an http:// target only; use --engine http", p.BaseURL)
	case p.HTTP == HTTP2:
		return errors.New("the raw engine speaks HTTP/1.1 only: HTTP/2 needs --engine http")
	case p.Retries > 0 || p.Replays > 0:
		return errors.New("retries and replays need --engine http")
	case p.After != nil:
		return errors.New("pay, cancel or abandon after the purchase needs --engine http")
	case p.Poll != nil:
		// The raw engine reads a lane's answers in order and has no buyer left to act on one.
		// Page refreshes need nothing of it: they go over their own pool on either engine.
		return errors.New("polling the order after a 202 needs --engine http")
	case !strings.HasPrefix(p.target().Purchase.URL, "/"):
		return errors.New("the raw engine sends the purchase to the target's own host: a profile whose purchase.url is a whole URL needs --engine http")
	}
	if p.Reveals() {
		// The purchase's URL is known only at the release, from the server: nothing to pre-serialize.
		return errors.New("the sale reveals its purchase path at the opening: each buyer fetches its path first, which the raw engine cannot; use --engine http (or auto)")
	}
	if _, ok := p.Journey.(Purchase); p.Journey != nil && !ok {
		return errors.New("the raw engine sends the direct purchase only; this journey needs --engine http")
	}
	return nil
}

// wireScratch is one preparing goroutine's: the purchase template (nil on the http engine), its
// reusable buffer and placeholder values, and the last purchase URL it rendered, which every click
// with the same URL shares.
type wireScratch struct {
	tmpl *rawRequest
	vars profile.Vars
	out  []byte
	last rawURL
	buf  bytes.Buffer
	url  string
	slab []byte // where the prepared bytes are kept: keep
}

// wireSlab is the size of the blocks the prepared requests are kept in: a 500,000-buyer burst's
// connection carries ~225 KB, so a lane prepared in one go spans one or two blocks.
const wireSlab = 256 << 10

// keep copies b into w's slab, right after the request kept before it, and returns the copy.
// Requests prepared one after the other lie back to back, and a lane prepared in one go
// (Plan.prepare) goes to the kernel as a few long pieces (appendWire) instead of one a request:
// the copying into loopback TCP took a fifth longer from 500 scattered pieces a connection than
// from one (docs/benchmarks.md). A copy's capacity runs on into the slab: nothing appends to it.
func (w *wireScratch) keep(b []byte) []byte {
	if cap(w.slab)-len(w.slab) < len(b) {
		w.slab = make([]byte, 0, max(wireSlab, len(b)))
	}
	n := len(w.slab)
	w.slab = append(w.slab, b...)
	return w.slab[n:len(w.slab)]
}

// appendWire appends each of bs to iov, lengthening the last piece instead when one lies right
// after it in the same slab (keep).
func appendWire(iov [][]byte, bs ...[]byte) [][]byte {
	for _, b := range bs {
		if n := len(iov); n > 0 && len(b) > 0 {
			// b fits in last's capacity, so last[:len(last)+1] is in bounds.
			if last := iov[n-1]; len(b) <= cap(last)-len(last) && &last[:len(last)+1][len(last)] == &b[0] {
				iov[n-1] = last[:len(last)+len(b)]
				continue
			}
		}
		iov = append(iov, b)
	}
	return iov
}

// serialize writes click c's purchase, with the buyer's token, as the raw engine sends it
// (HTTP/1.1 bytes) into c.wire, and its first attempt's method and URL into its record: from the
// template where it can, through net/http's Request.Write where it must. The bytes are copied out
// of w's scratch at their exact size into its slab (keep): a buffer grown by doubling would keep up
// to twice them for every buyer until the release, and a heap object each would round them up to
// its size class.
func (p *Plan) serialize(c *click, token string, w *wireScratch) error {
	buy := profile.Buy{Sale: c.rec.Target.SaleID, Item: c.rec.Target.ItemID, User: c.rec.User, Key: c.rec.Key, Token: token, Buyer: c.rec.Buyer}
	if w.tmpl != nil {
		if w.vars == nil {
			w.vars = profile.Vars{}
		}
		buy.Fill(w.vars)
		var ok bool
		if w.out, ok = w.tmpl.append(w.out[:0], p.BaseURL, w.vars, &w.last); ok {
			c.wire = w.keep(w.out)
			c.rec.Attempt, c.rec.Method, c.rec.URL = 1, w.tmpl.method, w.last.full
			return nil
		}
	}
	req, err := p.target().PurchaseRequest(p.BaseURL, buy)
	if err != nil {
		return fmt.Errorf("buyer %d: %w", c.rec.Buyer, err)
	}
	w.buf.Reset()
	if err := req.Write(&w.buf); err != nil {
		return fmt.Errorf("serialize buyer %d: %w", c.rec.Buyer, err)
	}
	c.wire = w.keep(w.buf.Bytes())
	if u := req.URL.String(); u != w.url {
		w.url = u
	}
	c.rec.Attempt, c.rec.Method, c.rec.URL = 1, req.Method, w.url
	return nil
}

// rawAddr is the host:port the raw engine dials.
func rawAddr(base string) (string, error) {
	u, err := url.Parse(base)
	if err != nil {
		return "", err
	}
	port := u.Port()
	if port == "" {
		port = "80"
	}
	return net.JoinHostPort(u.Hostname(), port), nil
}

// rawLanes is how many connections the raw engine sends clicks over: click i goes over i mod it.
func (p *Plan) rawLanes(clicks int) int { return min(p.Conns, max(1, clicks)) }

// lane is one connection's share of the clicks, in the order they are written and answered.
type lane struct {
	conn net.Conn
	idx  []int    // indices into the records
	wire [][]byte // each click's request bytes
}

// runRaw is Run on the raw engine: click i goes over connection i mod C, whose writer pipelines
// the prepared bytes at the release and whose reader fills the records in order.
func (p Plan) runRaw(ctx context.Context, clicks []click, recs []Record, begin time.Time, cpuStart time.Duration) (*Result, error) {
	addr, err := rawAddr(p.BaseURL)
	if err != nil {
		return nil, err
	}
	lanes := make([]*lane, p.rawLanes(len(clicks)))
	for i := range lanes {
		lanes[i] = &lane{}
	}
	for i := range clicks {
		l := lanes[i%len(lanes)]
		l.idx = append(l.idx, i)
		l.wire = append(l.wire, clicks[i].wire)
	}
	// From here on the lanes hold the bytes and the records are recs: the clicks (tokens, the
	// journey's leftovers) are garbage once this loop is done.
	buyers := len(clicks) / p.Clicks
	defer func() {
		for _, l := range lanes {
			if l.conn != nil {
				l.conn.Close()
			}
		}
	}()
	if err := p.dialLanes(ctx, addr, lanes); err != nil {
		return nil, err
	}
	res := &Result{At: p.At, Buyers: buyers, Conns: len(lanes), Prepared: p.now().Sub(begin), cpuStart: cpuStart}
	release := make(chan struct{})
	wait, err := p.startLanes(ctx, addr, lanes, recs, release)
	if err != nil {
		return nil, err
	}
	err = sleepUntil(ctx, p.At, p.now, spin)
	if err == nil {
		res.released(p.now())
	}
	close(release)
	wait()
	if err != nil {
		return nil, err
	}
	res.Records = recs
	return res, nil
}

// startLanes readies the lanes to go at release: a burst's on event loops where the system has
// them, a schedule's on a goroutine a lane; wait returns when every click is settled.
func (p Plan) startLanes(ctx context.Context, addr string, lanes []*lane, recs []Record, release <-chan struct{}) (wait func(), err error) {
	if eventLoops && p.Schedule == nil {
		return p.startLoops(ctx, addr, lanes, recs, release)
	}
	var wg sync.WaitGroup
	for _, l := range lanes {
		wg.Go(func() {
			<-release
			p.drive(ctx, addr, l, recs)
		})
	}
	return wg.Wait, nil
}

// dialLanes opens every lane's connection and warms it with a GET of the health path (any status will do),
// so the server's side of each connection is up before the release.
func (p Plan) dialLanes(ctx context.Context, addr string, lanes []*lane) error {
	errs := make([]error, len(lanes))
	var wg sync.WaitGroup
	for i, l := range lanes {
		wg.Go(func() { l.conn, errs[i] = p.dialWarm(ctx, addr) })
	}
	wg.Wait()
	return unreachable(p.BaseURL, "connections", errs)
}

// dialer is how the raw engine dials: the plan's timeout, kept alive.
func (p Plan) dialer() net.Dialer {
	return net.Dialer{Timeout: p.Timeout, KeepAlive: 30 * time.Second}
}

func (p Plan) dialWarm(ctx context.Context, addr string) (net.Conn, error) {
	d := p.dialer()
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	var host string
	if u, err := url.Parse(p.BaseURL); err == nil {
		host = u.Host
	}
	_ = conn.SetDeadline(time.Now().Add(p.Timeout))
	_, err = io.WriteString(conn, "GET "+p.healthPath()+" HTTP/1.1\r\nHost: "+host+"\r\nUser-Agent: Go-http-client/1.1\r\n\r\n")
	var resp *http.Response
	if err == nil {
		resp, err = http.ReadResponse(bufio.NewReader(conn), nil)
	}
	if err == nil {
		_, err = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	if err != nil || resp.Close {
		// A target that will not keep the warm-up's connection open still gets a fresh one.
		conn.Close()
		return d.DialContext(ctx, "tcp", addr)
	}
	_ = conn.SetDeadline(time.Time{})
	return conn, nil
}

// drive sends a lane's clicks and reads their answers; when the connection fails or the server
// closes it, it dials once more and resends what was never answered (the same keys, so the server's
// idempotency makes the resend safe), and records TRANSPORT_ERROR for what is left after that.
func (p Plan) drive(ctx context.Context, addr string, l *lane, recs []Record) {
	idx, wire := l.idx, l.wire
	for redials := 0; ; redials++ {
		n, err := p.exchange(ctx, l.conn, idx, wire, recs)
		idx, wire = idx[n:], wire[n:]
		if len(idx) == 0 {
			return
		}
		if redials == 0 && ctx.Err() == nil {
			l.conn.Close()
			var derr error
			d := p.dialer()
			if l.conn, derr = d.DialContext(ctx, "tcp", addr); derr == nil {
				continue
			}
			l.conn = nil
			err = fmt.Errorf("%w; redial: %w", err, derr)
		}
		done := p.now()
		for _, i := range idx {
			recs[i].Done, recs[i].Outcome, recs[i].Error = done, TransportError, err.Error()
			if p.Settled != nil {
				p.Settled(&recs[i])
			}
		}
		p.settled(len(idx))
		return
	}
}

// errServerClosed stops a lane whose server answered with Connection: close.
var errServerClosed = errors.New("server closed the connection")

// exchange writes the requests over conn, at most rawWindow unanswered, and reads the answers in
// order into recs. It returns how many of them are settled (answered, timed out or answered with
// garbage) and, when that is not all, why it stopped.
func (p Plan) exchange(ctx context.Context, conn net.Conn, idx []int, wire [][]byte, recs []Record) (int, error) {
	stopCtx := context.AfterFunc(ctx, func() { _ = conn.SetDeadline(time.Unix(1, 0)) })
	defer stopCtx()
	local := conn.LocalAddr().String()
	slots := make(chan struct{}, rawWindow)
	sent := make(chan time.Time, len(idx))
	wctx, stop := context.WithCancel(ctx)
	var werr error
	var wg sync.WaitGroup
	wg.Go(func() {
		defer close(sent)
		werr = p.pipeline(wctx, conn, local, idx, wire, recs, slots, sent)
	})
	defer func() {
		stop()
		wg.Wait()
	}()
	br := bufio.NewReaderSize(conn, 16<<10)
	var memo answerMemo
	var deadline time.Time
	for n, i := range idx {
		written, ok := <-sent
		if !ok {
			wg.Wait()
			return n, fmt.Errorf("write: %w", werr)
		}
		r := &recs[i]
		if d := written.Add(p.Timeout); !d.Equal(deadline) { // a batch's requests share theirs
			deadline = d
			_ = conn.SetReadDeadline(d)
		}
		if err := ctx.Err(); err != nil { // after the deadline is set: a cancel now still cuts the read
			return n, err
		}
		settled, err := p.readAnswer(ctx, br, r, &memo)
		if settled {
			p.settled(1)
			if p.Settled != nil {
				p.Settled(r)
			}
		}
		if err != nil {
			if settled {
				n++
			}
			conn.Close() // the stream is out of step or over; the writer stops on it
			return n, err
		}
		<-slots
	}
	return len(idx), nil
}

// pipeline is exchange's writer: it writes the requests over conn as they fall due, each batch in
// one write, taking a slot per request (at most rawWindow unanswered), stamps their records and
// hands each one's write time to the reader on sent. It returns why it stopped before the end.
func (p Plan) pipeline(ctx context.Context, conn net.Conn, local string, idx []int, wire [][]byte, recs []Record,
	slots chan struct{}, sent chan<- time.Time) error {
	for i := 0; i < len(idx); {
		// An open-model click waits for its place on the schedule; a burst's are all due.
		if err := sleepUntil(ctx, recs[idx[i]].Intended, p.now, 0); err != nil {
			return err
		}
		select {
		case slots <- struct{}{}:
		case <-ctx.Done():
			return ctx.Err()
		}
		j := i + 1
		for j < len(idx) && !recs[idx[j]].Intended.After(p.now()) && acquire(slots) {
			j++
		}
		start := p.now()
		bufs := net.Buffers(appendWire(nil, wire[i:j]...))
		_, err := bufs.WriteTo(conn)
		written := p.now()
		for k := i; k < j; k++ {
			r := &recs[idx[k]]
			r.Started, r.Conn = start, local
			if err == nil {
				r.Written = written
			}
		}
		if err != nil {
			return err
		}
		for range j - i {
			sent <- written
		}
		i = j
	}
	return nil
}

// acquire takes a slot of the window if one is free, without waiting.
func acquire(slots chan struct{}) bool {
	select {
	case slots <- struct{}{}:
		return true
	default:
		return false
	}
}

// answerMemo is a connection's reader's: the buffer its answers' bodies are read into, and the
// last answer it classified of each of the last few statuses it saw.
type answerMemo struct {
	buf  bytes.Buffer
	last [memoStatuses]classified
	next int // the entry a status not remembered takes next
}

// memoStatuses is how many statuses a memo remembers an answer of: a burst's answers are a few
// kinds (reserved, sold out, limited, too early), and its buyers' answers of one kind interleave
// with the others' on a connection.
const memoStatuses = 4

// classified is an answer and its verdict.
type classified struct {
	ok      bool
	status  int
	body    []byte
	outcome outcome.Code
	orderID string
}

// classify is c's verdict on the answer, the verdict of the last answer of the same status again
// when the bytes are the same (a classifier is a function of them): a sold-out burst answers
// hundreds of thousands of buyers with one body, and decoding its JSON every time was a quarter of
// the raw engine's CPU. One answer a status: with only the last answer remembered, every sold-out
// answer after a reserved one on the connection was decoded again (BenchmarkAnswerMemo).
func (m *answerMemo) classify(c *Classifier, status int, body []byte) (outcome.Code, string) {
	e := m.entry(status)
	if e.ok && e.status == status && bytes.Equal(body, e.body) {
		return e.outcome, e.orderID
	}
	e.outcome, e.orderID = c.Classify(status, body)
	e.ok, e.status, e.body = true, status, append(e.body[:0], body...)
	return e.outcome, e.orderID
}

// entry is the memo's answer of status, or the entry that status takes, the oldest taken.
func (m *answerMemo) entry(status int) *classified {
	for i := range m.last {
		if m.last[i].ok && m.last[i].status == status {
			return &m.last[i]
		}
	}
	e := &m.last[m.next]
	m.next = (m.next + 1) % len(m.last)
	return e
}

// unanswered is true of a connection that ended before its answer began: the request may never
// have reached the server, so it is sent again on a fresh connection.
func unanswered(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) || errors.Is(err, net.ErrClosed)
}

// record fills r from its answer a, read whole at now, and classifies it.
func (p Plan) record(r *Record, a rawAnswer, memo *answerMemo, now time.Time) {
	r.Status, r.Proto, r.BytesIn = a.status, a.proto, len(a.body)
	r.RetryAfter = retryAfter(a.retryAfter, now)
	r.Done = now
	r.Outcome, r.OrderID = memo.classify(p.Classifier, a.status, a.body)
}

// readAnswer reads and classifies one answer into r. It reports whether r is settled: an answer,
// a timeout or garbage settle it; a connection that ended before the answer does not.
func (p Plan) readAnswer(ctx context.Context, br *bufio.Reader, r *Record, memo *answerMemo) (bool, error) {
	fail := func(err error) (bool, error) {
		r.Done = p.now()
		if ctxErr := ctx.Err(); ctxErr != nil {
			r.Outcome, r.Error = TransportError, ctxErr.Error()
			return true, ctxErr
		}
		if r.failed(err); r.Outcome == Timeout {
			return true, err
		}
		return !unanswered(err), err
	}
	if _, err := br.Peek(1); err != nil {
		return fail(err)
	}
	r.FirstByte = p.now()
	a, err := readRawAnswer(br, &memo.buf)
	if err != nil {
		if !a.headed {
			return fail(err)
		}
		_, err := fail(err)
		return true, err // the answer began: the server has the request
	}
	p.record(r, a, memo, p.now())
	if a.close {
		return true, errServerClosed
	}
	return true, nil
}
