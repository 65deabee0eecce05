package ingest

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/google/uuid"
	"github.com/segmentio/kafka-go"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/fsctl/fsctl/internal/checkout/events"
	"github.com/fsctl/fsctl/internal/checkout/orders"
	"github.com/fsctl/fsctl/internal/checkout/stock"
)

// Recorder records batches of order events in PostgreSQL. The consumer is one user; a Redis
// rebuild is the other, catching PostgreSQL up with the log itself instead of waiting for the
// group (reconcile's catch-up).
type Recorder struct {
	placer  Placer
	release Releaser
	// dlq nil: refused orders and payments are left alone, for the consumer group to dead-letter
	// (and release) when it reaches them, so a message is dead-lettered once.
	dlq     DeadLetters
	metrics Metrics
	// tracer is nil unless Trace turned tracing on.
	tracer trace.Tracer
	// recorded, when set, hears the items of each recorded batch (OnRecorded).
	recorded func(items []stock.ItemRef)
	log      *slog.Logger
}

// OnRecorded sets a hook that hears, after each recorded batch, the items its orders were for:
// their Redis stock changed when those orders were reserved (or refused and released), so the
// stock read model publishes their snapshots (package readmodel). It must not block.
func (c *Recorder) OnRecorded(fn func(items []stock.ItemRef)) { c.recorded = fn }

// NewRecorder returns a Recorder; dlq may be nil (see Recorder).
func NewRecorder(placer Placer, release Releaser, dlq DeadLetters, m Metrics, log *slog.Logger) *Recorder {
	return &Recorder{placer: placer, release: release, dlq: dlq, metrics: m, log: log}
}

// dropStale leaves out the placements whose hold already ended in Redis. Such an event is a
// hand-off the server saw fail — it released the unit and told the buyer nothing was reserved —
// that Kafka delivered after all (the broker appended it, the acknowledgement was lost). Recorded,
// it would count a unit sold that is back on sale, and take the buyer's slot from their retry.
// Orders already recorded (expired, cancelled, paid) are dropped too, which only skips a duplicate.
func (c *Recorder) dropStale(ctx context.Context, ps []orders.Placement, evs []events.OrderPlaced, src []kafka.Message, tr *batchTrace) ([]orders.Placement, []events.OrderPlaced, []kafka.Message, error) {
	if len(ps) == 0 {
		return ps, evs, src, nil
	}
	refs := make([]stock.OrderRef, len(ps))
	for i, p := range ps {
		refs[i] = stock.OrderRef{SaleID: p.SaleID, ItemID: p.ItemID, Shard: p.Shard, Shards: evs[i].Shards, OrderID: p.OrderID}
	}
	ended, err := c.release.ReleasedOrders(ctx, refs)
	if err != nil {
		return nil, nil, nil, err
	}
	keep := 0
	for i := range ps {
		if ended[i] {
			c.log.Warn("dropping a stale OrderPlaced: its hold already ended in Redis", "order", ps[i].OrderID)
			tr.result(ps[i].OrderID, "stale: its hold already ended")
			continue
		}
		ps[keep], evs[keep], src[keep] = ps[i], evs[i], src[i]
		keep++
	}
	if n := len(ps) - keep; n > 0 && c.metrics.Stale != nil {
		c.metrics.Stale(n)
	}
	return ps[:keep], evs[:keep], src[:keep], nil
}

// Record records one batch. It is idempotent, so a retry after a partial failure is safe, and so
// is a batch recorded twice (by a rebuild's catch-up and then the group): orders already placed
// come back as duplicates, payments already recorded as unchanged, and releases and settles
// happen at most once.
func (c *Recorder) Record(ctx context.Context, batch []kafka.Message) (err error) {
	if c.metrics.BatchSize != nil {
		c.metrics.BatchSize(len(batch))
	}
	b := splitBatch(batch)
	tr := c.traceBatch(ctx, b.placed, b.sources, len(batch))
	defer func() { tr.end(err) }()
	b.placements, b.placed, b.sources, err = c.dropStale(ctx, b.placements, b.placed, b.sources, tr)
	if err != nil {
		return err
	}
	// Placements first: an order's OrderPaid follows its OrderPlaced in the partition, possibly in
	// the same batch.
	results, err := c.placeTraced(ctx, b.placements, tr)
	if err != nil {
		return err
	}
	t := c.tally(results, &b, tr)
	settle, deadPaid, err := c.markPaid(ctx, b.marks, b.markSrc)
	if err != nil {
		return err
	}
	b.dead = append(b.dead, deadPaid...)
	if c.dlq == nil {
		// Left for the group: it records the same messages later and dead-letters these then.
		b.dead, t.refused = nil, nil
	}
	if err := c.finish(ctx, b.dead, t.refused, settle); err != nil {
		return err
	}
	if t.stale > 0 && c.metrics.Stale != nil {
		c.metrics.Stale(t.stale)
	}
	c.count(t.persisted, t.dups, len(settle), b.dead)
	c.tellRecorded(b.placed)
	return nil
}

// batchParts is a batch sorted by event: the placements with their events and messages (index for
// index), the payments with their messages, and the messages to dead-letter.
type batchParts struct {
	placements []orders.Placement
	placed     []events.OrderPlaced
	sources    []kafka.Message
	marks      []orders.PaidMark
	markSrc    []kafka.Message
	dead       []kafka.Message
}

// splitBatch decodes a batch and sorts it by event; an undecodable message is dead-lettered.
func splitBatch(batch []kafka.Message) batchParts {
	var b batchParts
	for _, m := range batch {
		ev, err := events.Decode(m.Value)
		if err != nil {
			b.dead = append(b.dead, deadLetter(m, "undecodable", err.Error()))
			continue
		}
		switch e := ev.(type) {
		case *events.OrderPlaced:
			b.placed = append(b.placed, *e)
			b.sources = append(b.sources, m)
			b.placements = append(b.placements, orders.Placement{
				OrderID: e.OrderID, SaleID: e.SaleID, ItemID: e.ItemID, UserID: e.UserID,
				Slot: e.Slot, Shard: e.Shard, CreatedAt: e.CreatedAt, ExpiresAt: e.ExpiresAt, Epoch: e.Epoch,
				SaleSlot: e.SaleSlot, IdemKey: e.IdemKey,
			})
		case *events.OrderPaid:
			b.marks = append(b.marks, orders.PaidMark{OrderID: e.OrderID, PaymentRef: e.PaymentRef})
			b.markSrc = append(b.markSrc, m)
		}
	}
	return b
}

// placeTraced records the placements (place) as the batch trace's "postgres place_orders" step.
func (c *Recorder) placeTraced(ctx context.Context, placements []orders.Placement, tr *batchTrace) ([]orders.PlaceResult, error) {
	if len(placements) == 0 {
		return nil, nil
	}
	var ids []uuid.UUID // of traced batches only
	for i := 0; tr != nil && i < len(placements); i++ {
		ids = append(ids, placements[i].OrderID)
	}
	var results []orders.PlaceResult
	err := tr.step("postgres place_orders", ids, func() (err error) {
		results, err = c.place(ctx, placements)
		return err
	}, attribute.String("db.system.name", "postgresql"), attribute.Int("db.operation.batch.size", len(placements)))
	if err != nil {
		return nil, fmt.Errorf("record %d orders: %w", len(placements), err)
	}
	return results, nil
}

// placeTally is what PostgreSQL made of a batch's placements.
type placeTally struct {
	persisted, dups, stale int
	refused                []events.OrderPlaced
}

// tally counts the placement results; a refused order is dead-lettered (b.dead) and kept to release.
func (c *Recorder) tally(results []orders.PlaceResult, b *batchParts, tr *batchTrace) placeTally {
	var t placeTally
	for i, r := range results {
		tr.result(r.OrderID, r.Result.String())
		switch r.Result {
		case orders.Placed:
			t.persisted++
		case orders.Duplicate:
			t.dups++
		case orders.Stale:
			// Made on a Redis state a rebuild replaced, and not in its snapshot: the unit is on
			// sale again and the buyer was told to retry. Nothing to record, release or dead-letter.
			t.stale++
			c.log.Warn("dropping a stale OrderPlaced: Redis was rebuilt since its reservation", "order", r.OrderID, "epoch", b.placed[i].Epoch)
		case orders.Refused:
			t.refused = append(t.refused, b.placed[i])
			b.dead = append(b.dead, deadLetter(b.sources[i], r.Reason, "refused by PostgreSQL"))
		}
	}
	return t
}

// finish dead-letters what the batch could not record, releases the units of refused orders and
// settles the paid holds in Redis.
func (c *Recorder) finish(ctx context.Context, dead []kafka.Message, refused []events.OrderPlaced, settle []stock.Settle) error {
	if len(dead) > 0 {
		if err := c.dlq.Publish(ctx, dead...); err != nil {
			return err
		}
	}
	for _, e := range refused {
		// The buyer may have been told "reserved" by a replay; forgetting the key makes their
		// retry a fresh attempt instead of a reservation that will never exist.
		if _, err := c.release.Release(ctx, stock.Release{SaleID: e.SaleID, ItemID: e.ItemID, Shard: e.Shard, Shards: e.Shards,
			OrderID: e.OrderID, Status: "FAILED", ForgetUser: e.UserID, ForgetKey: e.IdemKey}); err != nil {
			return err
		}
		c.log.Error("database refused an order; unit released", "order", e.OrderID, "sale", e.SaleID, "item", e.ItemID)
	}
	for _, st := range settle {
		if _, err := c.release.Settle(ctx, st); err != nil {
			return err
		}
	}
	return nil
}

// tellRecorded gives the OnRecorded hook each item of the batch's orders once.
func (c *Recorder) tellRecorded(placed []events.OrderPlaced) {
	if c.recorded == nil || len(placed) == 0 {
		return
	}
	seen := map[string]bool{}
	var items []stock.ItemRef
	for _, e := range placed {
		if k := e.SaleID + "/" + e.ItemID; !seen[k] {
			seen[k] = true
			items = append(items, stock.ItemRef{SaleID: e.SaleID, ItemID: e.ItemID, Shards: e.Shards})
		}
	}
	c.recorded(items)
}

// markPaid records the batch's payments and returns the paid holds to settle in Redis, and dead
// letters for payments of orders that are missing or no longer live: a buyer was charged for
// them, so they are counted loudly for a refund.
func (c *Recorder) markPaid(ctx context.Context, marks []orders.PaidMark, src []kafka.Message) ([]stock.Settle, []kafka.Message, error) {
	if len(marks) == 0 {
		return nil, nil, nil
	}
	res, err := c.placer.MarkPaidBatch(ctx, marks)
	if err != nil {
		return nil, nil, fmt.Errorf("record %d payments: %w", len(marks), err)
	}
	var settle []stock.Settle
	var dead []kafka.Message
	for i, r := range res {
		switch {
		case r.Missing:
			c.log.Error("payment for an order PostgreSQL does not have; refund it", "order", r.OrderID)
			dead = append(dead, deadLetter(src[i], ReasonPaidUnknown, "no such order"))
		case r.Status != orders.StatusPaid:
			c.log.Error("payment for an order that is no longer live; refund it", "order", r.OrderID, "status", r.Status)
			dead = append(dead, deadLetter(src[i], ReasonPaidClosed, "order is "+r.Status))
		default:
			settle = append(settle, stock.Settle{SaleID: r.SaleID, ItemID: r.ItemID, Shard: r.Shard, Shards: r.Shards, OrderID: r.OrderID})
		}
	}
	return settle, dead, nil
}

// place records placements. When PostgreSQL rejects the batch for what a message carries (not
// for an outage), it halves the batch until it has found the messages at fault and marks them
// refused, so one poison message cannot stall its partition forever; the rest are recorded.
func (c *Recorder) place(ctx context.Context, ps []orders.Placement) ([]orders.PlaceResult, error) {
	res, err := c.placer.PlaceBatch(ctx, ps)
	if err == nil || !orders.IsRejected(err) {
		return res, err
	}
	if len(ps) == 1 {
		c.log.Error("PostgreSQL rejected an order", "order", ps[0].OrderID, "err", err)
		return []orders.PlaceResult{{OrderID: ps[0].OrderID, Result: orders.Refused, Reason: ReasonRejected}}, nil
	}
	left, err := c.place(ctx, ps[:len(ps)/2])
	if err != nil {
		return nil, err
	}
	right, err := c.place(ctx, ps[len(ps)/2:])
	if err != nil {
		return nil, err
	}
	return append(left, right...), nil
}

func (c *Recorder) count(persisted, dups, paid int, dead []kafka.Message) {
	if c.metrics.Persisted != nil {
		c.metrics.Persisted(persisted)
	}
	if c.metrics.Paid != nil {
		c.metrics.Paid(paid)
	}
	if c.metrics.Duplicates != nil {
		c.metrics.Duplicates(dups)
	}
	if c.metrics.DeadLettered != nil {
		for _, m := range dead {
			c.metrics.DeadLettered(headerValue(m, "reason"))
		}
	}
}
