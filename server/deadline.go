package server

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/fsctl/fsctl/internal/contract/outcome"
)

// DefaultPurchaseDeadline is how long a buyer waits for a purchase's answer at most by default:
// above the publish timeout (5 s), so a broker that acknowledges late still gets its yes out, and
// below the 10 s a buyer's app (and the game day's buyers) give up after.
const DefaultPurchaseDeadline = 6 * time.Second

// answerWithin gives a purchase a deadline of its own (Config.PurchaseDeadline): a buyer whose
// purchase is not answered by then (a store frozen before the reserve, a broker that does not
// acknowledge, a confirm that does not come back) hears 503 UNAVAILABLE with a Retry-After at the
// deadline instead of at its client's timeout. The purchase goes on behind the answer: its
// hand-off runs on its own clock (purchase.go), and a yes that comes later is kept under the
// Idempotency-Key, so the buyer's retry with the same key gets it; what it writes is dropped.
// Until the reserve, the purchase's context ends at the deadline, so it stops waiting too. For a
// purchase without a body that context is a coarseClock's (clock.go), shared by the purchases that
// start within the same 10 ms: it ends up to 10 ms after the deadline's answer, and a buyer who
// hangs up does not end it (from the reserve on nothing did before either).
//
// A purchase without a body (almost all) runs on the request's own goroutine, and the late answer
// is written by the deadline's timer while that goroutine is still inside the purchase: it is the
// only writer of the response then (the purchase writes into its held answer), and the answer
// closes the connection, so the buyer's retry comes on a new one instead of waiting behind the
// purchase. Handing every purchase to another goroutine, to be free to answer at the deadline,
// cost two more goroutine switches a purchase: a tenth of the server's CPU in make bench-sale's
// bursts (docs/benchmarks.md). A purchase with a body runs on a worker as before: its goroutine
// may still be reading the body at the deadline, and net/http's reading and answering of one
// request must not overlap. So does one over HTTP/2, whose answer ends (END_STREAM) only when its
// handler returns.
func (s *Server) answerWithin(h http.HandlerFunc) http.HandlerFunc {
	d := s.cfg.PurchaseDeadline
	if d <= 0 {
		return h
	}
	clock := newCoarseClock(d)
	return func(w http.ResponseWriter, r *http.Request) {
		bw := heldAnswers.Get().(*heldAnswer)
		if r.ProtoMajor != 1 || r.Body != nil && r.Body != http.NoBody {
			ctx, cancel := context.WithTimeout(r.Context(), d)
			defer cancel()
			s.answerFromWorker(ctx, w, r, h, bw)
			return
		}
		ctx := clock.on(r.Context()) // no timer of its own: the late answer's is the one
		bw.to = w
		late := time.AfterFunc(d, func() {
			if r.Context().Err() == nil && bw.answerLate(s.lateAnswer()) { // nobody to answer once the buyer hung up
				s.metrics.pastDeadline.Inc()
				s.log.Warn("purchase not answered within the deadline; told to retry", "path", r.URL.Path, "deadline", d)
			}
		})
		answered := false
		defer func() {
			if !answered { // h panicked: the timer must leave w alone before net/http recovers
				late.Stop()
				bw.abandon()
			}
		}()
		h(bw, r.WithContext(ctx))
		answered = true
		if late.Stop() { // the deadline's timer will not touch bw
			bw.sendTo(w)
			bw.release()
			return
		}
		// The timer fired: it answered, or it finds the buyer gone or the answer sent and leaves.
		// It may still hold bw, which is therefore never reused.
		bw.sendTo(w)
	}
}

// answerFromWorker runs a purchase that has a body on a worker, and answers at the deadline if
// the purchase has not by then.
func (s *Server) answerFromWorker(ctx context.Context, w http.ResponseWriter, r *http.Request, h http.HandlerFunc, bw *heldAnswer) {
	purchaseWorkers.run(func() {
		defer func() { bw.done <- recover() }()
		h(bw, r.WithContext(ctx))
	})
	select {
	case p := <-bw.done:
		if p != nil {
			panic(p) // net/http's own recovery, as if h had run here
		}
		bw.sendTo(w)
		bw.release()
	case <-ctx.Done():
		select {
		case p := <-bw.done: // answered as the deadline passed
			if p != nil {
				panic(p)
			}
			bw.sendTo(w)
			bw.release()
			return
		default:
		}
		// The purchase goes on with bw: it is never released to be reused.
		bw.expire()
		if ctx.Err() == context.DeadlineExceeded { // not a buyer who hung up
			s.metrics.pastDeadline.Inc()
			s.log.Warn("purchase not answered within the deadline; told to retry", "path", r.URL.Path, "deadline", s.cfg.PurchaseDeadline)
		}
		s.writeCode(w, outcome.Unavailable, s.pastDeadlineMessage())
	}
}

func (s *Server) pastDeadlineMessage() string {
	return fmt.Sprintf("no answer within the purchase deadline (%s); it may still go through: retry with the same Idempotency-Key to learn how it ended", s.cfg.PurchaseDeadline)
}

// lateAnswer renders the deadline's 503 as writeCode writes it, for answerLate to send whole.
func (s *Server) lateAnswer() *heldAnswer {
	late := &heldAnswer{header: http.Header{}}
	s.writeCode(late, outcome.Unavailable, s.pastDeadlineMessage())
	return late
}

// heldAnswer holds a purchase's answer until it is sent whole (sendTo) or the deadline passed
// (expire), after which whatever the purchase writes is dropped. One answered in time is reused
// (heldAnswers): its header map, body buffer and channel are a tenth of the sold-out path's
// allocations.
type heldAnswer struct {
	mu      sync.Mutex
	header  http.Header
	status  int
	body    []byte
	expired bool
	sent    bool
	done    chan any // the purchase's end, on a worker: nil, or what it panicked with

	// to is the request's own writer, for a purchase on the request's goroutine: the deadline's
	// timer answers there, under mu, unless sendTo has.
	to http.ResponseWriter
}

var heldAnswers = sync.Pool{New: func() any {
	return &heldAnswer{header: http.Header{}, status: http.StatusOK, done: make(chan any, 1)}
}}

// release makes a sent answer ready for the next purchase. Only the request's goroutine calls it,
// once the purchase has ended and the deadline's timer cannot fire, so nothing else holds a.
func (a *heldAnswer) release() {
	clear(a.header)
	a.status, a.body, a.expired, a.sent, a.to = http.StatusOK, a.body[:0], false, false, nil
	heldAnswers.Put(a)
}

func (a *heldAnswer) Header() http.Header { return a.header }

func (a *heldAnswer) WriteHeader(status int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.status = status
}

func (a *heldAnswer) Write(b []byte) (int, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if !a.expired {
		a.body = append(a.body, b...)
	}
	return len(b), nil
}

// expire drops what the purchase writes from now on.
func (a *heldAnswer) expire() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.expired = true
}

// answerLate sends late (lateAnswer) to the request's writer in place of the purchase's answer,
// with Connection: close, and drops what the purchase writes from now on; it reports false when
// the purchase's own answer was sent first. The answer is flushed whole (its length given), so the
// buyer has it now, while the purchase goes on.
func (a *heldAnswer) answerLate(late *heldAnswer) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.sent {
		return false
	}
	a.expired, a.sent = true, true
	late.header.Set("Content-Length", strconv.Itoa(len(late.body)))
	late.header.Set("Connection", "close")
	late.sendTo(a.to)
	_ = http.NewResponseController(a.to).Flush()
	return true
}

// abandon marks the answer sent without sending it: nothing may write to the request's writer.
func (a *heldAnswer) abandon() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.sent = true
}

// sendTo writes the held answer to w, unless the late answer was sent.
func (a *heldAnswer) sendTo(w http.ResponseWriter) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.sent {
		return
	}
	a.sent = true
	for k, v := range a.header {
		w.Header()[k] = v
	}
	w.WriteHeader(a.status)
	_, _ = w.Write(a.body)
}
