package main

import (
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fsctl/fsctl/blast"
)

// writeRequestFiles writes the per-request files blast was asked for: vegeta results (--results)
// and the full records that fsctl blast merge reads (--records).
func writeRequestFiles(o blastOptions, p blast.Plan, res *blast.Result, limits map[blast.Target]blast.ItemLimit) error {
	if o.results != "" {
		if err := writeFile(o.results, func(f *os.File) error { return blast.WriteResults(f, res.Records) }); err != nil {
			return err
		}
	}
	if o.records != "" {
		h := blast.HeaderOf(p, res, limits)
		if err := writeFile(o.records, func(f *os.File) error { return blast.WriteRecords(f, h, res.Records) }); err != nil {
			return err
		}
	}
	return nil
}

// writeFile creates path and fills it with write, reporting the first error of either.
func writeFile(path string, write func(*os.File) error) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := write(f); err != nil {
		f.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	return f.Close()
}

// showBurstProgress prints, once a second from the release on, how many clicks have their answer
// and at what rate, so an operator watching a long burst sees it move. The returned stop ends it.
func showBurstProgress(w io.Writer, at time.Time, answered *atomic.Int64) (stop func()) {
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		select {
		case <-done:
			return
		case <-time.After(time.Until(at)):
		}
		t := time.NewTicker(time.Second)
		defer t.Stop()
		last := int64(0)
		for {
			select {
			case <-done:
				return
			case <-t.C:
				n := answered.Load()
				fmt.Fprintf(w, "burst: %d answered (%d/s)\n", n, n-last)
				last = n
			}
		}
	}()
	return func() {
		close(done)
		<-finished
	}
}

// lockedWriter serializes writes from goroutines that share one progress stream.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(b)
}
