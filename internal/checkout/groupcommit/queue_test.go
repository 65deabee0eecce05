package groupcommit

import (
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/fsctl/fsctl/internal/harness/testenv/eventually"
)

// recorder is a send function that records its batches; the first batch waits for release.
type recorder struct {
	mu      sync.Mutex
	batches [][]int
	entered chan struct{}
	gate    chan struct{}
	once    sync.Once
	done    sync.WaitGroup
}

func newRecorder(items int) *recorder {
	r := &recorder{entered: make(chan struct{}, 1), gate: make(chan struct{})}
	r.done.Add(items)
	return r
}

func (r *recorder) send(batch []int) {
	r.mu.Lock()
	first := len(r.batches) == 0
	r.batches = append(r.batches, slices.Clone(batch))
	r.mu.Unlock()
	if first {
		r.entered <- struct{}{}
		<-r.gate
	}
	r.done.Add(-len(batch))
}

func (r *recorder) release() { r.once.Do(func() { close(r.gate) }) }

func (r *recorder) recorded() [][]int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.batches)
}

// inMemory is the pace of waits on the queue's own state: asking is cheap, and the tests are short.
const inMemory = 50 * time.Microsecond

func waitPending(t *testing.T, q *Queue[int], n int) {
	t.Helper()
	eventually.OKEvery(t, 5*time.Second, inMemory, func() error {
		if got := q.Pending(); got != n {
			return fmt.Errorf("%d pending, want %d", got, n)
		}
		return nil
	})
}

// TestLoneItemGoesAlone: an item added to an idle queue is sent at once in a batch of its own.
func TestLoneItemGoesAlone(t *testing.T) {
	r := newRecorder(1)
	r.release()
	q := New(8, 1, r.send)
	q.Add(7)
	r.done.Wait()
	if got := r.recorded(); !slices.EqualFunc(got, [][]int{{7}}, slices.Equal) {
		t.Fatalf("batches %v, want [[7]]", got)
	}
}

// TestQueuedItemsShareTheNextBatch: what is added while a batch is in flight goes out together,
// in the order added, at most max at a time.
func TestQueuedItemsShareTheNextBatch(t *testing.T) {
	r := newRecorder(1 + 10)
	t.Cleanup(r.release)
	q := New(4, 1, r.send)
	q.Add(0)
	<-r.entered
	for i := 1; i <= 10; i++ {
		q.Add(i)
	}
	waitPending(t, q, 10)
	r.release()
	r.done.Wait()
	want := [][]int{{0}, {1, 2, 3, 4}, {5, 6, 7, 8}, {9, 10}}
	if got := r.recorded(); !slices.EqualFunc(got, want, slices.Equal) {
		t.Fatalf("batches %v, want %v", got, want)
	}
}

// TestLanesBoundBatchesInFlight: with two lanes, a second item starts a second batch while the
// first is held; a third waits for a lane.
func TestLanesBoundBatchesInFlight(t *testing.T) {
	var mu sync.Mutex
	inFlight, most := 0, 0
	gate := make(chan struct{})
	var done sync.WaitGroup
	done.Add(3)
	q := New(1, 2, func(batch []int) {
		mu.Lock()
		inFlight++
		most = max(most, inFlight)
		mu.Unlock()
		<-gate
		mu.Lock()
		inFlight--
		mu.Unlock()
		done.Add(-len(batch))
	})
	for i := range 3 {
		q.Add(i)
	}
	waitPending(t, q, 1) // two taken by the lanes, one waiting
	// Both lanes must be inside send before the gate opens: a lane that took its item but had not
	// yet counted itself would otherwise pass the open gate after the other left it.
	eventually.OKEvery(t, 5*time.Second, inMemory, func() error {
		mu.Lock()
		n := inFlight
		mu.Unlock()
		if n != 2 {
			return fmt.Errorf("%d batches in flight, want 2", n)
		}
		return nil
	})
	close(gate)
	done.Wait()
	if most != 2 {
		t.Fatalf("at most %d batches in flight, want 2", most)
	}
}
