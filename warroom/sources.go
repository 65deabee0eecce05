package warroom

import "context"

// The data sources, one small interface per panel group, so a target that can feed only some
// panels (its profile declares only some parts) leaves the others nil and they show "not available".

// InventorySource reads every item's remaining and held units.
type InventorySource interface {
	Inventory(ctx context.Context) ([]ItemStock, error)
}

// OrdersSource reads the source of truth's orders per item by status.
type OrdersSource interface {
	Orders(ctx context.Context) ([]ItemOrders, error)
}

// TrafficSource reads the purchase endpoint's cumulative counters and latency.
type TrafficSource interface {
	Traffic(ctx context.Context) (Traffic, error)
}

// AdmissionSource reads the waiting room.
type AdmissionSource interface {
	Admission(ctx context.Context) (Admission, error)
}

// PaymentSource reads the payment provider's breaker and outcomes.
type PaymentSource interface {
	Payment(ctx context.Context) (Payment, error)
}

// PipelineSource reads the order pipeline's consumer lag and dead letters.
type PipelineSource interface {
	Pipeline(ctx context.Context) (Pipeline, error)
}

// ControlSource reads the sale's operator state and carries out operator actions.
type ControlSource interface {
	Control(ctx context.Context) (Control, error)
	// PauseSale pauses (true) or resumes the sale.
	PauseSale(ctx context.Context, paused bool) error
	// SetRoom changes the waiting room; nil fields stay as they are.
	SetRoom(ctx context.Context, paused *bool, rate *float64) error
	// SetSwitch throws (off=true) or resets a kill switch.
	SetSwitch(ctx context.Context, name string, off bool) error
}

// Sources are the data sources of one dashboard; a nil source is not available on this target.
type Sources struct {
	Sale string
	// Profile names the target profile the sources read through ("" in tests of fakes).
	Profile string
	// Absent says why a nil source is not available, by panel name (items, orders, traffic,
	// admission, payment, pipeline, control).
	Absent    map[string]string
	Inventory InventorySource
	Orders    OrdersSource
	Traffic   TrafficSource
	Admission AdmissionSource
	Payment   PaymentSource
	Pipeline  PipelineSource
	Control   ControlSource
}
