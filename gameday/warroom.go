package gameday

import (
	"context"
	"fmt"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/fsctl/fsctl/internal/harness/stack"
	"github.com/fsctl/fsctl/internal/platform/kafkaconn"
	"github.com/fsctl/fsctl/warroom"
)

// WarRoom is the timeline source of a game day: the war room's snapshots, taken every Interval
// while the sale runs, recorded as `fsctl warroom --records` does (JSON lines), and turned into
// timeline events where something changed: a panel's source going down or coming back, an
// alert firing or clearing.
type WarRoom struct {
	Endpoints stack.Endpoints
	SaleID    string
	// RecordPath receives every snapshot as a JSON line; empty records nothing.
	RecordPath string
	Interval   time.Duration

	stop   context.CancelFunc
	done   chan struct{}
	mu     sync.Mutex
	events []Event
	err    error
	// Snapshots counts the snapshots taken.
	Snapshots int
}

// NewWarRoom watches the sale on the stack's endpoints, recording to path.
func NewWarRoom(e stack.Endpoints, saleID, path string) *WarRoom {
	return &WarRoom{Endpoints: e, SaleID: saleID, RecordPath: path, Interval: 500 * time.Millisecond}
}

// Start opens the war room's sources on the servers and starts taking snapshots.
func (w *WarRoom) Start(ctx context.Context, t0 time.Time, servers []string) error {
	src, closeSources, err := warroom.Open(warroom.Endpoints{
		Sale: w.SaleID, RedisURL: w.Endpoints.RedisURL, PostgresURL: w.Endpoints.PostgresURL,
		Kafka: kafkaconn.EnvFor(w.Endpoints.KafkaBrokers), Servers: servers,
	})
	if err != nil {
		return err
	}
	var rec *warroom.Recorder
	var f *os.File
	if w.RecordPath != "" {
		if f, err = os.OpenFile(w.RecordPath, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644); err != nil {
			closeSources()
			return err
		}
		rec = warroom.NewRecorder(f)
	}
	ctx, w.stop = context.WithCancel(context.WithoutCancel(ctx))
	w.done = make(chan struct{})
	go func() {
		defer close(w.done)
		defer closeSources()
		if f != nil {
			defer f.Close()
		}
		w.loop(ctx, t0, src, rec)
	}()
	return nil
}

func (w *WarRoom) loop(ctx context.Context, t0 time.Time, src warroom.Sources, rec *warroom.Recorder) {
	alerts := warroom.DefaultAlerts()
	var prev *warroom.Snapshot
	tick := time.NewTicker(w.Interval)
	defer tick.Stop()
	for {
		cur := warroom.Collect(ctx, src, warroom.CollectOptions{Timeout: time.Second})
		if ctx.Err() != nil {
			return
		}
		cur.Merge(prev)
		warroom.Derive(prev, &cur)
		cur.Alerts = warroom.Evaluate(alerts, &cur)
		if rec != nil {
			if err := rec.Write(cur); err != nil {
				w.setErr(err)
			}
		}
		w.diff(t0, prev, &cur)
		prev = &cur
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// diff adds an event per panel whose state changed and per alert that fired or cleared.
func (w *WarRoom) diff(t0 time.Time, prev, cur *warroom.Snapshot) {
	at := cur.At.Sub(t0)
	var evs []Event
	add := func(format string, args ...any) {
		evs = append(evs, Event{At: at, Source: "warroom", What: fmt.Sprintf(format, args...)})
	}
	if prev == nil {
		add("recording snapshots every %s", w.Interval)
	}
	// A late source (warroom.DownAfter) is noted only if it goes down.
	state := func(s warroom.State) warroom.State {
		if s == warroom.Late {
			return warroom.OK
		}
		return s
	}
	before := map[string]warroom.State{}
	if prev != nil {
		for _, r := range prev.Readings() {
			before[r.Name] = state(r.State)
		}
	}
	for _, r := range cur.Readings() {
		old, seen := before[r.Name]
		if r.State == "" || (seen && old == state(r.State)) || (!seen && state(r.State) == warroom.OK) {
			continue
		}
		if r.Error != "" {
			add("panel %s: %s (%s)", r.Name, r.State, clip(r.Error, 120))
		} else {
			add("panel %s: %s", r.Name, r.State)
		}
	}
	var was, now []string
	if prev != nil {
		for _, a := range prev.Alerts {
			was = append(was, a.Level+" "+a.Metric)
		}
	}
	for _, a := range cur.Alerts {
		now = append(now, a.Level+" "+a.Metric)
		if !slices.Contains(was, a.Level+" "+a.Metric) {
			add("alert fired: %s", a)
		}
	}
	for _, k := range was {
		if !slices.Contains(now, k) {
			add("alert cleared: %s", k)
		}
	}
	w.mu.Lock()
	w.events = append(w.events, evs...)
	w.Snapshots++
	w.mu.Unlock()
}

func (w *WarRoom) setErr(err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err == nil {
		w.err = err
	}
}

// Stop ends the recording and returns the events.
func (w *WarRoom) Stop() ([]Event, error) {
	if w.stop == nil {
		return nil, nil
	}
	w.stop()
	<-w.done
	w.mu.Lock()
	defer w.mu.Unlock()
	evs := append(slices.Clip(w.events), Event{At: 0, Source: "warroom", What: fmt.Sprintf("%d snapshots recorded to %s", w.Snapshots, w.RecordPath)})
	evs[len(evs)-1].At = lastAt(evs)
	return evs, w.err
}

func lastAt(evs []Event) time.Duration {
	var m time.Duration
	for _, e := range evs {
		m = max(m, e.At)
	}
	return m
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
