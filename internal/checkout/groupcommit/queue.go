// Package groupcommit sends work in batches without a timer: an item that finds the queue idle is
// sent at once, alone; whatever arrives while a batch is in flight waits and goes out together in
// the next one. A burst therefore shares round trips, and a quiet caller adds no latency. The
// purchase path uses it for Redis pipelines (stock) and Kafka produce requests (events).
package groupcommit

import "sync"

// Queue hands its items to send in batches of at most max, with at most lanes batches in flight.
// Items are handed over in the order they were added; with one lane, batches are sent one after
// another in that order too. The zero Queue is not usable; see New.
type Queue[T any] struct {
	send       func(batch []T)
	max, lanes int

	mu      sync.Mutex
	pending []T
	running int
}

// New returns a queue that calls send (from a goroutine of its own) with each batch. max and
// lanes below 1 count as 1. send must not keep the slice it is given.
func New[T any](maxItems, lanes int, send func(batch []T)) *Queue[T] {
	return &Queue[T]{send: send, max: max(maxItems, 1), lanes: max(lanes, 1)}
}

// Add queues item and starts a lane when fewer than lanes are sending.
func (q *Queue[T]) Add(item T) {
	q.mu.Lock()
	q.pending = append(q.pending, item)
	start := q.running < q.lanes
	if start {
		q.running++
	}
	q.mu.Unlock()
	if start {
		go q.lane()
	}
}

// Pending reports how many items wait for a batch (for tests and metrics).
func (q *Queue[T]) Pending() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.pending)
}

// lane sends batches until nothing is pending.
func (q *Queue[T]) lane() {
	var batch []T
	for {
		q.mu.Lock()
		n := min(len(q.pending), q.max)
		if n == 0 {
			q.running--
			q.mu.Unlock()
			return
		}
		batch = append(batch[:0], q.pending[:n]...)
		rest := copy(q.pending, q.pending[n:])
		clear(q.pending[rest:])
		q.pending = q.pending[:rest]
		q.mu.Unlock()
		q.send(batch)
		clear(batch)
	}
}
