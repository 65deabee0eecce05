package warroom

import (
	"context"
	"errors"
	"maps"
	"slices"
	"sync"
	"time"
)

// fakeSources is a deterministic target: every source answers from fields a test sets, and the
// control source records the actions it was asked to take.
type fakeSources struct {
	mu        sync.Mutex
	items     []ItemStock
	orders    []ItemOrders
	traffic   Traffic
	admission Admission
	payment   Payment
	pipeline  Pipeline
	control   Control
	down      map[string]error
	actions   []string
	// slowTraffic delays the traffic source's answer (or until its probe's deadline).
	slowTraffic time.Duration
}

func newFake() *fakeSources {
	return &fakeSources{
		items:  []ItemStock{{ID: "console", Quantity: 100, Remaining: 40, Held: 20, Shards: 1}, {ID: "headset", Quantity: 50, Remaining: 0, Held: 5, Shards: 2}},
		orders: []ItemOrders{{ID: "console", Quantity: 100, Sold: 60, Pending: 18, Paid: 40}, {ID: "headset", Quantity: 50, Sold: 50, Pending: 5, Paid: 45}},
		traffic: Traffic{Outcomes: map[string]float64{"RESERVED": 105, "SOLD_OUT": 300, "ALREADY_PURCHASED": 4, "NOT_ADMITTED": 10, "RATE_LIMITED": 2},
			Latency: Histogram{Bounds: []float64{.001, .005, .01, .05, .1}, Counts: []float64{100, 300, 400, 418, 421}, Count: 421, Sum: 2}, Servers: 1, ServersTotal: 1},
		admission: Admission{QueueDepth: 120, Active: 50, Rate: 25, WaitSeconds: 4.8, AdmittedTotal: 300},
		payment:   Payment{Breaker: "closed", Outcomes: map[string]float64{"PAID": 85, "PAYMENT_DECLINED": 15}},
		pipeline:  Pipeline{Topic: "fsctl.orders", Group: "g", Partitions: []PartitionLag{{Partition: 0, End: 40, Committed: 38, Lag: 2}, {Partition: 1, End: 35, Committed: 35, Lag: 0}, {Partition: 2, End: 30, Committed: 30, Lag: 0}}, Lag: 2},
		control:   Control{Room: &Room{Rate: 25, MaxActive: 500}, Switches: map[string]bool{"purchase": false, "payment": false, "expiry": false, "sweeper": false}},
		down:      map[string]error{},
	}
}

func (f *fakeSources) sources() Sources {
	return Sources{Sale: "black-friday", Inventory: f, Orders: f, Traffic: f, Admission: f, Payment: f, Pipeline: f, Control: f}
}

func (f *fakeSources) err(name string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.down[name]
}

func (f *fakeSources) setDown(name string, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.down[name] = err
}

func (f *fakeSources) Inventory(context.Context) ([]ItemStock, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.items), f.down["items"]
}

func (f *fakeSources) Orders(context.Context) ([]ItemOrders, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.orders), f.down["orders"]
}

func (f *fakeSources) Traffic(ctx context.Context) (Traffic, error) {
	f.mu.Lock()
	slow := f.slowTraffic
	f.mu.Unlock()
	if slow > 0 {
		select {
		case <-ctx.Done():
			return Traffic{}, ctx.Err()
		case <-time.After(slow):
		}
	}
	t := f.traffic
	t.Outcomes = maps.Clone(t.Outcomes)
	return t, f.err("traffic")
}

func (f *fakeSources) Admission(context.Context) (Admission, error) {
	return f.admission, f.err("admission")
}
func (f *fakeSources) Payment(context.Context) (Payment, error) {
	p := f.payment
	p.Outcomes = maps.Clone(p.Outcomes)
	return p, f.err("payment")
}

func (f *fakeSources) Pipeline(context.Context) (Pipeline, error) {
	return f.pipeline, f.err("pipeline")
}
func (f *fakeSources) Control(context.Context) (Control, error) { return f.control, f.err("control") }

func (f *fakeSources) PauseSale(_ context.Context, paused bool) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.actions = append(f.actions, map[bool]string{true: "pause", false: "resume"}[paused])
	return nil
}

func (f *fakeSources) SetRoom(_ context.Context, paused *bool, rate *float64) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	switch {
	case rate != nil:
		f.actions = append(f.actions, "rate "+num(*rate))
	case paused != nil:
		f.actions = append(f.actions, map[bool]string{true: "room pause", false: "room resume"}[*paused])
	}
	return nil
}

func (f *fakeSources) SetSwitch(_ context.Context, name string, off bool) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if name == "sweeper" {
		return errors.New("switch store unavailable")
	}
	f.actions = append(f.actions, map[bool]string{true: "off ", false: "on "}[off]+name)
	return nil
}

// stepClock is a clock that moves only when a test says so.
type stepClock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *stepClock { return &stepClock{t: time.Date(2026, 11, 27, 9, 0, 0, 0, time.UTC)} }

func (c *stepClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *stepClock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}
