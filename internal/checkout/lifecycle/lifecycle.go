// Package lifecycle ends reservations: every way a hold can finish — paid, declined, cancelled,
// expired, or orphaned by a crash — goes through here, and each one returns its unit to Redis at
// most once and only after PostgreSQL, the source of truth, has committed the order's new status.
package lifecycle

import (
	"context"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/google/uuid"
	"go.opentelemetry.io/otel/trace"

	"github.com/fsctl/fsctl/internal/checkout/events"
	"github.com/fsctl/fsctl/internal/checkout/orders"
	"github.com/fsctl/fsctl/internal/checkout/payment"
	"github.com/fsctl/fsctl/internal/checkout/stock"
	"github.com/fsctl/fsctl/internal/contract/sale"
	"github.com/fsctl/fsctl/internal/platform/tracing"
)

// Orders is the source of truth's side of the lifecycle; *orders.Store implements it.
type Orders interface {
	ClaimPayment(ctx context.Context, id uuid.UUID, userID string) (orders.Order, orders.Claim, error)
	MarkPaid(ctx context.Context, id uuid.UUID, paymentRef string) (orders.Order, bool, error)
	FailPayment(ctx context.Context, id uuid.UUID) (orders.Order, bool, error)
	Cancel(ctx context.Context, id uuid.UUID, userID string) (orders.Order, bool, error)
	ExpireDue(ctx context.Context, limit int) ([]orders.Order, error)
	StuckClaims(ctx context.Context, olderThan time.Duration, limit int) ([]orders.Order, error)
	Statuses(ctx context.Context, ids []uuid.UUID) (map[uuid.UUID]string, error)
	SaleIDs(ctx context.Context) ([]string, error)
	LoadSale(ctx context.Context, id string) (sale.Sale, error)
}

// Stock is the Redis side; *stock.Store implements it.
type Stock interface {
	Release(ctx context.Context, r stock.Release) (bool, error)
	Settle(ctx context.Context, s stock.Settle) (bool, error)
	LookupOrder(ctx context.Context, orderID uuid.UUID) (stock.OrderState, bool, error)
	Holds(ctx context.Context, saleID, itemID string, shard, shards int) ([]stock.Hold, error)
	RepairTransfers(ctx context.Context, saleID, itemID string, shards int, olderThan time.Duration) (int, error)
	SweepClaims(ctx context.Context, saleID string, shards map[string]int, minAge time.Duration) (int, error)
}

// Payments charges buyers; *payment.Breaker implements it.
type Payments interface {
	Charge(ctx context.Context, c payment.Charge) (payment.Receipt, error)
	Void(ctx context.Context, orderID uuid.UUID) (payment.Receipt, error)
}

// Publisher puts order events on the orders topic; *events.Publisher implements it.
type Publisher interface {
	PublishOrderPlaced(ctx context.Context, e events.OrderPlaced) error
	PublishOrderPaid(ctx context.Context, e events.OrderPaid) error
}

// Metrics are the lifecycle's counters; nil fields are skipped.
type Metrics struct {
	// Released counts units returned to stock, by reason (expired, cancelled, declined, ...).
	Released func(reason string)
	// Payments counts payment attempts by result (paid, declined, unavailable, unknown).
	Payments func(result string)
	// Republished counts orphaned holds whose OrderPlaced was published again.
	Republished func(n int)
	// Repaired counts holds the sweeper finished for an order PostgreSQL had already closed.
	Repaired func(n int)
}

// Config tunes the jobs and the payment saga.
type Config struct {
	// PaymentTimeout bounds one call to the payment provider.
	PaymentTimeout time.Duration
	// RecordWait is how long pay and cancel wait for an order still on its way to PostgreSQL.
	RecordWait time.Duration
	// ExpiryInterval and ExpiryBatch pace the expiry job.
	ExpiryInterval time.Duration
	ExpiryBatch    int
	// SweepInterval paces the orphaned-hold sweeper; OrphanAge is how old a hold must be before a
	// missing order counts as orphaned rather than in flight.
	SweepInterval time.Duration
	OrphanAge     time.Duration
	// ClaimTimeout is when a payment claim with no outcome (its server died mid-charge) is settled
	// with the provider.
	ClaimTimeout time.Duration
	// TransferAge is when an unapplied stock transfer between shards is repaired.
	TransferAge time.Duration
	// ClaimAge is how old a per-sale claim must be before the sweeper gives it back for want of a
	// live order: longer than any purchase takes between its claim and its reserve, or a claim
	// in flight would be taken from its buyer.
	ClaimAge time.Duration
	// Currency of the charges.
	Currency string
}

// DefaultConfig returns production-minded settings.
func DefaultConfig() Config {
	return Config{
		PaymentTimeout: 3 * time.Second,
		RecordWait:     2 * time.Second,
		ExpiryInterval: time.Second,
		ExpiryBatch:    500,
		SweepInterval:  5 * time.Second,
		OrphanAge:      30 * time.Second,
		ClaimTimeout:   15 * time.Second,
		TransferAge:    5 * time.Second,
		ClaimAge:       time.Minute,
		Currency:       "USD",
	}
}

// Deps are what a Service is built from.
type Deps struct {
	Orders    Orders
	Stock     Stock
	Payments  Payments
	Publisher Publisher
	Metrics   Metrics
	Log       *slog.Logger
	// Now defaults to time.Now; it ages holds for the sweeper.
	Now func() time.Time
	// Enabled, when set, is asked before each job round ("expiry", "sweeper"); false skips the
	// round (an operator's kill switch).
	Enabled func(job string) bool
	// Tracer traces the payment saga's steps and each job round; nil: off.
	Tracer trace.TracerProvider
	// StockChanged, when set, hears each item a release returned a unit to, so the stock read
	// model publishes its snapshot (package readmodel). It must not block.
	StockChanged func(item stock.ItemRef)
}

// Service runs the payment saga, cancellations and the background jobs.
type Service struct {
	cfg Config
	Deps

	// republished remembers when this instance last re-published each orphaned hold, so a consumer
	// that lags for minutes does not get the same order again every sweep.
	mu          sync.Mutex
	republished map[uuid.UUID]time.Time
	tracer      trace.Tracer
}

// New returns a Service.
func New(cfg Config, d Deps) *Service {
	if d.Log == nil {
		d.Log = slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	if d.Now == nil {
		d.Now = time.Now
	}
	return &Service{cfg: cfg, Deps: d, republished: map[uuid.UUID]time.Time{}, tracer: tracing.Tracer(d.Tracer)}
}

// release returns one closed order's unit to Redis. PostgreSQL has already committed the order's
// final status, so a failure here is only logged: the sweeper sees the hold of a closed order
// and finishes the release.
func (s *Service) release(ctx context.Context, o orders.Order, reason string) {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	released, err := s.Stock.Release(rctx, stock.Release{
		SaleID: o.SaleID, ItemID: o.ItemID, Shard: o.Shard, Shards: o.Shards, OrderID: o.ID, Status: o.Status,
	})
	if err != nil {
		s.Log.Error("release after commit failed; the sweeper will return this unit", "order", o.ID, "status", o.Status, "err", err)
		return
	}
	if released && s.Metrics.Released != nil {
		s.Metrics.Released(reason)
	}
	if released {
		s.stockChanged(o.SaleID, o.ItemID, o.Shards)
	}
}

func (s *Service) stockChanged(saleID, itemID string, shards int) {
	if s.StockChanged != nil {
		s.StockChanged(stock.ItemRef{SaleID: saleID, ItemID: itemID, Shards: shards})
	}
}

func (s *Service) enabled(job string) bool { return s.Enabled == nil || s.Enabled(job) }
