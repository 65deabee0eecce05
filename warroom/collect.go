package warroom

import (
	"context"
	"sync"
	"time"
)

// DefaultProbeTimeout bounds each source's probe, so a source that is down never holds up a refresh.
const DefaultProbeTimeout = time.Second

// CollectOptions shape one Collect.
type CollectOptions struct {
	// Timeout bounds each probe (DefaultProbeTimeout when zero).
	Timeout time.Duration
	// FastOnly reads only the cheap sources (metrics, Kafka offsets), leaving the slow ones (Redis
	// snapshot, PostgreSQL counts, admin state) unread so a merge keeps their last answers.
	FastOnly bool
	// Now is the clock (time.Now when nil).
	Now func() time.Time
}

// Collect reads every source concurrently, each under its own timeout, and returns the snapshot
// with each source's status. It never fails: a source that errs is Down, a nil one NotAvailable.
func Collect(ctx context.Context, src Sources, o CollectOptions) Snapshot {
	if o.Timeout <= 0 {
		o.Timeout = DefaultProbeTimeout
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	s := Snapshot{Sale: src.Sale, Profile: src.Profile, At: o.Now()}
	var wg sync.WaitGroup
	if !o.FastOnly {
		probe(ctx, &wg, o, src.Inventory, src.Absent["items"], &s.Items, InventorySource.Inventory)
		probe(ctx, &wg, o, src.Orders, src.Absent["orders"], &s.Orders, OrdersSource.Orders)
		probe(ctx, &wg, o, src.Control, src.Absent["control"], &s.Control, ControlSource.Control)
	}
	probe(ctx, &wg, o, src.Traffic, src.Absent["traffic"], &s.Traffic, TrafficSource.Traffic)
	probe(ctx, &wg, o, src.Admission, src.Absent["admission"], &s.Admission, AdmissionSource.Admission)
	probe(ctx, &wg, o, src.Payment, src.Absent["payment"], &s.Payment, PaymentSource.Payment)
	probe(ctx, &wg, o, src.Pipeline, src.Absent["pipeline"], &s.Pipeline, PipelineSource.Pipeline)
	wg.Wait()
	return s
}

// probe runs read on source in its own goroutine under the probe timeout and stores the reading.
// A nil source (a nil interface, not a typed nil pointer) is not available, for reason.
func probe[S any, T any](ctx context.Context, wg *sync.WaitGroup, o CollectOptions, source S, reason string, out *Reading[T], read func(S, context.Context) (T, error)) {
	if any(source) == nil {
		*out = Reading[T]{Status: Status{State: NotAvailable, Reason: reason, At: o.Now()}}
		return
	}
	wg.Go(func() {
		pctx, cancel := context.WithTimeout(ctx, o.Timeout)
		defer cancel()
		start := o.Now()
		v, err := read(source, pctx)
		st := Status{State: OK, At: o.Now()}
		st.TookMS = float64(st.At.Sub(start).Microseconds()) / 1000
		if err != nil {
			st.State, st.Error = Down, err.Error()
			*out = Reading[T]{Status: st}
			return
		}
		*out = Reading[T]{Status: st, Data: v}
	})
}

// Once takes the snapshot --once prints: two collections window apart, so the rates are rates over
// the window (window 0: one collection, rates cumulative), with derived values and alerts.
func Once(ctx context.Context, src Sources, alerts AlertConfig, window time.Duration, o CollectOptions) Snapshot {
	var prev *Snapshot
	if window > 0 {
		first := Collect(ctx, src, o)
		Derive(nil, &first)
		prev = &first
		select {
		case <-ctx.Done():
		case <-time.After(window):
		}
	}
	s := Collect(ctx, src, o)
	Derive(prev, &s)
	s.Alerts = Evaluate(alerts, &s)
	return s
}
