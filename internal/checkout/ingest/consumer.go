// Package ingest is the order consumer: it reads OrderPlaced events from Kafka in batches, records
// them in PostgreSQL in one transaction per batch, dead-letters what the database refuses (and
// returns those units to Redis), and commits Kafka offsets only after the database has committed.
package ingest

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/fsctl/fsctl/internal/checkout/events"
	"github.com/fsctl/fsctl/internal/checkout/orders"
	"github.com/fsctl/fsctl/internal/checkout/stock"
	"github.com/fsctl/fsctl/internal/platform/kafkaconn"
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
		MaxWait:        kafkaconn.IdleFetchWait,
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
