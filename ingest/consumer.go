// Package ingest is the order consumer: it reads OrderPlaced events from Kafka in batches, records
// them in PostgreSQL in one transaction per batch, dead-letters what the database refuses (and
// returns those units to Redis), and commits Kafka offsets only after the database has committed.
package ingest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/google/uuid"
	"github.com/segmentio/kafka-go"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/fsctl/fsctl/events"
	"github.com/fsctl/fsctl/kafkaconn"
	"github.com/fsctl/fsctl/orders"
	"github.com/fsctl/fsctl/stock"
)

// Placer records orders and their payments; *orders.Store implements it.
type Placer interface {
	PlaceBatch(ctx context.Context, ps []orders.Placement) ([]orders.PlaceResult, error)
	MarkPaidBatch(ctx context.Context, marks []orders.PaidMark) ([]orders.PaidResult, error)
}

// Releaser returns a refused order's unit to stock and takes a paid order's hold off the expiry
// clock; *stock.Store implements it.
type Releaser interface {
	Release(ctx context.Context, r stock.Release) (bool, error)
	Settle(ctx context.Context, s stock.Settle) (bool, error)
	ReleasedOrders(ctx context.Context, refs []stock.OrderRef) ([]bool, error)
}

// DeadLetters receives messages the consumer cannot record; *events.Publisher implements it.
type DeadLetters interface {
	Publish(ctx context.Context, msgs ...kafka.Message) error
}

// Metrics are the consumer's counters; nil fields are skipped.
type Metrics struct {
	Persisted    func(n int)
	Duplicates   func(n int)
	Paid         func(n int)
	DeadLettered func(reason string)
	BatchSize    func(n int)
	DBErrors     func()
	// Stale counts OrderPlaced events dropped because their hold had already ended in Redis, or
	// because Redis was rebuilt since their reservation (orders.Stale).
	Stale func(n int)
}

// Config configures a Consumer.
type Config struct {
	Kafka   kafkaconn.Conn
	Topic   string
	GroupID string
	// BatchSize is the most messages recorded in one transaction.
	BatchSize int
	// Linger is how long a batch waits for more messages once it has its first.
	Linger time.Duration
	// RetryBackoff is the pause between attempts when PostgreSQL or Redis fails.
	RetryBackoff time.Duration
	// SessionTimeout is how long the group coordinator waits for a member's heartbeat before it
	// drops the member and moves its partitions: a crashed instance holds its partitions, and a
	// rebalance waits for it, that long. kafka-go's default is 30 s; brokers refuse less than their
	// group.min.session.timeout.ms (6 s by default).
	SessionTimeout time.Duration
}

// DefaultSessionTimeout is the consumer group session the server asks for: the shortest a
// default broker allows, so a dead instance stalls its partitions (and a rebuild's drain) for
// seconds, not half a minute.
const DefaultSessionTimeout = 6 * time.Second

// DefaultConfig returns the settings the server uses.
func DefaultConfig(conn kafkaconn.Conn) Config {
	return Config{
		Kafka:          conn,
		Topic:          events.DefaultOrdersTopic,
		GroupID:        events.DefaultConsumerGroup,
		BatchSize:      500,
		Linger:         20 * time.Millisecond,
		RetryBackoff:   500 * time.Millisecond,
		SessionTimeout: DefaultSessionTimeout,
	}
}

// Consumer moves orders from Kafka to PostgreSQL: its group reader fetches batches, its Recorder
// records them, and offsets are committed after.
type Consumer struct {
	cfg    Config
	reader *kafka.Reader
	// client reads the group's committed offsets when the consumer is idle (heal); closeIdle
	// releases its connections.
	client    *kafka.Client
	closeIdle func()
	// recorded is, per partition, the offset after the last message this consumer recorded. Every
	// message before it is recorded: the reader reads a partition on from the group's committed
	// offset, and that offset only ever stands after recorded messages.
	recorded map[int]int64
	*Recorder
}

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

// New returns a consumer; Run starts it. An error is a Kafka connection wrong in form.
func New(cfg Config, placer Placer, release Releaser, dlq DeadLetters, m Metrics, log *slog.Logger) (*Consumer, error) {
	dialer, err := cfg.Kafka.Dialer(10 * time.Second)
	if err != nil {
		return nil, err
	}
	r := kafka.NewReader(kafka.ReaderConfig{
		Brokers:        cfg.Kafka.Brokers,
		Dialer:         dialer,
		GroupID:        cfg.GroupID,
		Topic:          cfg.Topic,
		MinBytes:       1,
		MaxBytes:       10 << 20,
		MaxWait:        100 * time.Millisecond,
		CommitInterval: 0, // synchronous: offsets are committed only when Run says so
		StartOffset:    kafka.FirstOffset,
		QueueCapacity:  cfg.BatchSize,
		// A member heartbeats three times a session, rejoins within two (kafka-go's defaults are
		// 3 s, 30 s and a 5 s backoff after a failed join), so a rebalance is over in seconds.
		SessionTimeout:    max(cfg.SessionTimeout, time.Second),
		HeartbeatInterval: max(cfg.SessionTimeout/3, 100*time.Millisecond),
		RebalanceTimeout:  max(2*cfg.SessionTimeout, time.Second),
		JoinGroupBackoff:  time.Second,
	})
	client, closeIdle, err := cfg.Kafka.Client(commitTimeout)
	if err != nil {
		return nil, err
	}
	return &Consumer{cfg: cfg, reader: r, client: client, closeIdle: closeIdle, recorded: map[int]int64{},
		Recorder: NewRecorder(placer, release, dlq, m, log)}, nil
}

// Close leaves the consumer group.
func (c *Consumer) Close() error {
	c.closeIdle()
	return c.reader.Close()
}

// Run consumes until ctx is cancelled. Database and Redis failures are retried without
// committing, and a lost broker is waited for, so nothing is lost; it returns only ctx's error.
func (c *Consumer) Run(ctx context.Context) error {
	for {
		batch, err := c.fetch(ctx)
		if err != nil {
			// A broker that is gone comes back (or another takes over): wait for it rather than
			// take the instance down with it. Nothing was fetched, so nothing is lost.
			if ctx.Err() != nil {
				return ctx.Err()
			}
			c.log.Warn("fetching orders failed; retrying", "err", err, "backoff", c.cfg.RetryBackoff)
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(c.cfg.RetryBackoff):
			}
			continue
		}
		if err := c.retry(ctx, func() error { return c.Record(ctx, batch) }); err != nil {
			return err
		}
		for _, m := range batch {
			c.recorded[m.Partition] = max(c.recorded[m.Partition], m.Offset+1)
		}
		if err := c.retry(ctx, func() error { return c.commit(ctx, batch) }); err != nil {
			return err
		}
	}
}

// commitTimeout bounds one commit: a commit queued behind a rebalance the reader has not finished
// would otherwise hold the consumer (a chaos run left one member waiting for 3 minutes after two
// broker freezes, the group's lag at 457).
const commitTimeout = 10 * time.Second

// commit commits a recorded batch. A commit the group refuses because it moved on (a rebalance:
// this member or its generation is gone) or that does not finish in commitTimeout is dropped, not
// retried: the partitions' new owner is redelivered the batch and records it again as duplicates.
// Other errors are retried (a broker restarting).
func (c *Consumer) commit(ctx context.Context, batch []kafka.Message) error {
	cctx, cancel := context.WithTimeout(ctx, commitTimeout)
	defer cancel()
	err := c.reader.CommitMessages(cctx, batch...)
	switch {
	case err == nil, ctx.Err() != nil:
		return err
	case errors.Is(err, kafka.UnknownMemberId), errors.Is(err, kafka.IllegalGeneration), errors.Is(err, kafka.RebalanceInProgress),
		errors.Is(err, context.DeadlineExceeded):
		c.log.Warn("commit dropped: the group moved on; the batch is redelivered and recorded again as duplicates", "err", err, "messages", len(batch))
		return nil
	}
	return err
}

// healAfter is how long a consumer waits for a message before it checks that the group's
// committed offsets are not behind what it recorded (heal).
const healAfter = 5 * time.Second

// fetch blocks for the first message, then gathers more until the batch is full or Linger passes.
// While it waits, it heals the group's offsets every healAfter.
func (c *Consumer) fetch(ctx context.Context) ([]kafka.Message, error) {
	var first kafka.Message
	for {
		wctx, cancel := context.WithTimeout(ctx, healAfter)
		m, err := c.reader.FetchMessage(wctx)
		cancel()
		if err == nil {
			first = m
			break
		}
		if ctx.Err() != nil || !errors.Is(err, context.DeadlineExceeded) {
			return nil, err
		}
		c.heal(ctx)
	}
	batch := []kafka.Message{first}
	lctx, cancel := context.WithTimeout(ctx, c.cfg.Linger)
	defer cancel()
	for len(batch) < c.cfg.BatchSize {
		m, err := c.reader.FetchMessage(lctx)
		if err != nil {
			break // the linger ran out (or ctx ended, which the caller sees next round)
		}
		batch = append(batch, m)
	}
	return batch, nil
}

// heal moves forward the group's committed offset of each partition this consumer recorded past
// it. A member's commit carries the group's current generation, not the one its batch was fetched
// in, and Kafka takes it from any member of the generation: a commit that waited out a rebalance
// (a broker frozen, then back) set a partition another member had read on since back to an older
// offset. That owner, idle with the sale over, never committed again, and the group lagged by a
// thousand messages it had recorded (chaos seeds 9 and 17: settle waited 3 minutes). A committed
// offset up to what this consumer recorded is true whoever owns the partition now, so each member
// puts its own part back, and only ever forward.
func (c *Consumer) heal(ctx context.Context) {
	if len(c.recorded) == 0 {
		return
	}
	hctx, cancel := context.WithTimeout(ctx, commitTimeout)
	defer cancel()
	parts := make([]int, 0, len(c.recorded))
	for p := range c.recorded {
		parts = append(parts, p)
	}
	res, err := c.client.OffsetFetch(hctx, &kafka.OffsetFetchRequest{GroupID: c.cfg.GroupID, Topics: map[string][]int{c.cfg.Topic: parts}})
	if err == nil {
		err = res.Error
	}
	if err != nil {
		c.log.Debug("reading the group's offsets failed; heal them next time", "err", err)
		return
	}
	committed := map[int]int64{}
	for _, p := range res.Topics[c.cfg.Topic] {
		if p.Error == nil {
			committed[p.Partition] = p.CommittedOffset
		}
	}
	var behind []kafka.Message
	for _, p := range parts {
		if at, ok := committed[p]; ok && at < c.recorded[p] {
			behind = append(behind, kafka.Message{Topic: c.cfg.Topic, Partition: p, Offset: c.recorded[p] - 1})
		}
	}
	if len(behind) == 0 {
		return
	}
	if err := c.reader.CommitMessages(hctx, behind...); err != nil {
		c.log.Debug("healing the group's offsets failed; try again next time", "err", err)
		return
	}
	for _, m := range behind {
		c.log.Warn("the group's committed offset was behind what this consumer recorded (a late commit set it back); moved it forward",
			"partition", m.Partition, "was", committed[m.Partition], "now", m.Offset+1)
	}
}

func (c *Consumer) retry(ctx context.Context, fn func() error) error {
	for {
		err := fn()
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if c.metrics.DBErrors != nil {
			c.metrics.DBErrors()
		}
		c.log.Warn("order consumer step failed; retrying", "err", err, "backoff", c.cfg.RetryBackoff)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(c.cfg.RetryBackoff):
		}
	}
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
	var (
		placements []orders.Placement
		placed     []events.OrderPlaced
		sources    []kafka.Message
		marks      []orders.PaidMark
		markSrc    []kafka.Message
		dead       []kafka.Message
	)
	for _, m := range batch {
		ev, err := events.Decode(m.Value)
		if err != nil {
			dead = append(dead, deadLetter(m, "undecodable", err.Error()))
			continue
		}
		switch e := ev.(type) {
		case *events.OrderPlaced:
			placed = append(placed, *e)
			sources = append(sources, m)
			placements = append(placements, orders.Placement{
				OrderID: e.OrderID, SaleID: e.SaleID, ItemID: e.ItemID, UserID: e.UserID,
				Slot: e.Slot, Shard: e.Shard, CreatedAt: e.CreatedAt, ExpiresAt: e.ExpiresAt, Epoch: e.Epoch,
				SaleSlot: e.SaleSlot, IdemKey: e.IdemKey,
			})
		case *events.OrderPaid:
			marks = append(marks, orders.PaidMark{OrderID: e.OrderID, PaymentRef: e.PaymentRef})
			markSrc = append(markSrc, m)
		}
	}
	tr := c.traceBatch(ctx, placed, sources, len(batch))
	defer func() { tr.end(err) }()
	placements, placed, sources, err = c.dropStale(ctx, placements, placed, sources, tr)
	if err != nil {
		return err
	}
	// Placements first: an order's OrderPaid follows its OrderPlaced in the partition, possibly in
	// the same batch.
	var results []orders.PlaceResult
	if len(placements) > 0 {
		var ids []uuid.UUID // of traced batches only
		for i := 0; tr != nil && i < len(placements); i++ {
			ids = append(ids, placements[i].OrderID)
		}
		err := tr.step("postgres place_order", ids, func() (err error) {
			results, err = c.place(ctx, placements)
			return err
		}, attribute.String("db.system.name", "postgresql"), attribute.Int("db.operation.batch.size", len(placements)))
		if err != nil {
			return fmt.Errorf("record %d orders: %w", len(placements), err)
		}
	}
	var refused []events.OrderPlaced
	var persisted, dups, stale int
	for i, r := range results {
		tr.result(r.OrderID, r.Result.String())
		switch r.Result {
		case orders.Placed:
			persisted++
		case orders.Duplicate:
			dups++
		case orders.Stale:
			// Made on a Redis state a rebuild replaced, and not in its snapshot: the unit is on
			// sale again and the buyer was told to retry. Nothing to record, release or dead-letter.
			stale++
			c.log.Warn("dropping a stale OrderPlaced: Redis was rebuilt since its reservation", "order", r.OrderID, "epoch", placed[i].Epoch)
		case orders.Refused:
			refused = append(refused, placed[i])
			dead = append(dead, deadLetter(sources[i], r.Reason, "refused by PostgreSQL"))
		}
	}
	settle, deadPaid, err := c.markPaid(ctx, marks, markSrc)
	if err != nil {
		return err
	}
	dead = append(dead, deadPaid...)
	if c.dlq == nil {
		// Left for the group: it records the same messages later and dead-letters these then.
		dead, refused = nil, nil
	}
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
	if stale > 0 && c.metrics.Stale != nil {
		c.metrics.Stale(stale)
	}
	c.count(persisted, dups, len(settle), dead)
	c.tellRecorded(placed)
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

// Dead-letter reasons of payments that could not be recorded.
const (
	ReasonPaidUnknown = "paid_unknown_order"
	ReasonPaidClosed  = "paid_closed_order"
)

// ReasonRejected is the dead-letter reason of an order PostgreSQL refused to store at all.
const ReasonRejected = "rejected"

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

// deadLetter wraps m for the dead-letter topic; reason is a short category (a metric label),
// detail the specific error.
func deadLetter(m kafka.Message, reason, detail string) kafka.Message {
	dl := events.DeadLetter{Reason: reason, Detail: detail, Topic: m.Topic, Partition: m.Partition, Offset: m.Offset, At: time.Now().UTC()}
	if json.Valid(m.Value) {
		dl.Value = m.Value
	} else {
		dl.Raw = m.Value
	}
	b, err := json.Marshal(dl)
	if err != nil {
		b = []byte(`{"reason":"unencodable dead letter"}`)
	}
	return kafka.Message{Key: m.Key, Value: b, Headers: []kafka.Header{{Key: "reason", Value: []byte(reason)}}}
}

func headerValue(m kafka.Message, key string) string {
	for _, h := range m.Headers {
		if h.Key == key {
			return string(h.Value)
		}
	}
	return ""
}
