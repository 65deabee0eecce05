package server

import "sync/atomic"

// purchaseWorkers runs the handler of each purchase that carries a body or comes over HTTP/2
// (answerWithin; the others run on their request's goroutine) on a goroutine that outlives it. A goroutine started per
// purchase begins with a small stack and grows it, copy by copy, to the depth of the purchase
// path (handler, reserve, group commit, go-redis); on the sold-out path that growth was a tenth
// of the server's CPU. A worker keeps its grown stack for the next purchase.
//
// A purchase never waits for a worker: it is handed to one idle worker, or to a new goroutine when
// none is idle. At most maxIdleWorkers wait for work between purchases (a few MiB of stacks); one
// finishing while that many wait ends. The pool is the process's, shared by its servers.
var purchaseWorkers = workerPool{tasks: make(chan func())}

const maxIdleWorkers = 1024

type workerPool struct {
	tasks chan func() // unbuffered: a send succeeds only into an idle worker's hands
	idle  atomic.Int32
}

// run runs f on an idle worker, or on a new goroutine that then stays as one.
func (p *workerPool) run(f func()) {
	select {
	case p.tasks <- f:
	default:
		go p.work(f)
	}
}

func (p *workerPool) work(f func()) {
	for {
		f()
		if p.idle.Add(1) > maxIdleWorkers {
			p.idle.Add(-1)
			return
		}
		f = <-p.tasks
		p.idle.Add(-1)
	}
}
