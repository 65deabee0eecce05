package server

import (
	"context"
	"fmt"
	"net/http"
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
// Until the reserve, the purchase's context ends at the deadline, so it stops waiting too.
func (s *Server) answerWithin(h http.HandlerFunc) http.HandlerFunc {
	d := s.cfg.PurchaseDeadline
	if d <= 0 {
		return h
	}
	return func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), d)
		defer cancel()
		bw := heldAnswers.Get().(*heldAnswer)
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
			s.metrics.pastDeadline.Inc()
			s.log.Warn("purchase not answered within the deadline; told to retry", "path", r.URL.Path, "deadline", d)
			s.writeCode(w, outcome.Unavailable, fmt.Sprintf("no answer within the purchase deadline (%s); it may still go through: retry with the same Idempotency-Key to learn how it ended", d))
		}
	}
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
	done    chan any // the purchase's end: nil, or what it panicked with
}

var heldAnswers = sync.Pool{New: func() any {
	return &heldAnswer{header: http.Header{}, status: http.StatusOK, done: make(chan any, 1)}
}}

// release makes a sent answer ready for the next purchase. Only the request's goroutine calls it,
// once the purchase has ended (done received), so nothing else holds a.
func (a *heldAnswer) release() {
	clear(a.header)
	a.status, a.body, a.expired = http.StatusOK, a.body[:0], false
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

// sendTo writes the held answer to w.
func (a *heldAnswer) sendTo(w http.ResponseWriter) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for k, v := range a.header {
		w.Header()[k] = v
	}
	w.WriteHeader(a.status)
	_, _ = w.Write(a.body)
}
