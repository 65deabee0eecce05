package reconcile

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/fsctl/fsctl/internal/checkout/ingest"
	"github.com/fsctl/fsctl/internal/checkout/stock"
	"github.com/fsctl/fsctl/internal/platform/kafkaconn"
)

// catchUp brings PostgreSQL up to the order log for a rebuild, without waiting for the consumer
// group: it reads every event from the group's committed position up to the log's end, as it
// stands once Redis is wiped, and records it with the consumer's own idempotent step (the group
// records the same events again later, as duplicates). A group held by a crashed instance, or
// behind by a burst, does not hold the sale down. What reaches the log after that read is the
// fence's (rebuild): PostgreSQL drops it as stale once the epoch is bumped.
//
// Refused orders and payments are left to the group, which dead-letters them once. Kafka or
// PostgreSQL down is waited for, up to DrainTimeout.
func (r *run) catchUp(ctx context.Context, redis ingest.Releaser) (int, error) {
	c := r.book
	rec := ingest.NewRecorder(c.db, redis, nil, ingest.Metrics{}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	giveUp := r.cfg.Now().Add(r.cfg.DrainTimeout)
	var next, ends map[int]int64 // each partition's next offset to record, and where to stop
	recorded := 0
	for {
		var err error
		if ends == nil {
			next, ends, err = r.logPositions(ctx)
			if err != nil {
				next, ends = nil, nil
			}
		}
		if err == nil {
			var n int
			n, err = r.record(ctx, rec, next, ends)
			recorded += n
		}
		switch {
		case err == nil:
			fmt.Fprintf(r.cfg.Progress, "reconcile: recorded %d events from the order log (group %s catches up on its own)\n", recorded, r.cfg.ConsumerGroup)
			return recorded, nil
		case r.cfg.Now().After(giveUp):
			return recorded, fmt.Errorf("the order log could not be recorded in PostgreSQL within %s: %w", r.cfg.DrainTimeout, err)
		}
		fmt.Fprintf(r.cfg.Progress, "reconcile: catching up with the order log: %v; trying again\n", err)
		select {
		case <-ctx.Done():
			return recorded, ctx.Err()
		case <-time.After(catchUpRetry):
		}
	}
}

// lostRedis is the Releaser of a Redis that lost the sale's state (RecordLog): no hold-release
// marker is left, and a paid order's hold is settled by the rebuild's reload from PostgreSQL.
type lostRedis struct{}

func (lostRedis) Release(context.Context, stock.Release) (bool, error) { return false, nil }
func (lostRedis) Settle(context.Context, stock.Settle) (bool, error)   { return false, nil }
func (lostRedis) ReleasedOrders(_ context.Context, refs []stock.OrderRef) ([]bool, error) {
	return make([]bool, len(refs)), nil
}

// logPositions reads each partition of the orders topic: the group's committed position (where
// none, the first offset) and the end.
func (r *run) logPositions(ctx context.Context) (committed, ends map[int]int64, err error) {
	g, err := kafkaconn.GroupLag(ctx, r.kafka, r.cfg.OrdersTopic, r.cfg.ConsumerGroup)
	if err != nil {
		return nil, nil, err
	}
	committed, ends = map[int]int64{}, map[int]int64{}
	for _, p := range g.Partitions {
		committed[p.Partition], ends[p.Partition] = p.End-p.Lag, p.End
	}
	return committed, ends, nil
}

// catchUpRetry paces catch-up's tries while Kafka or PostgreSQL is down.
const catchUpRetry = 500 * time.Millisecond

// catchUpBatch is how many events one transaction records, the consumer's batch size.
const catchUpBatch = 500

// record records each partition's events from next up to ends, and moves next past them.
func (r *run) record(ctx context.Context, rec *ingest.Recorder, next, ends map[int]int64) (int, error) {
	n := 0
	for p, end := range ends {
		from, ok := next[p]
		if !ok || from >= end {
			next[p] = max(from, end)
			continue
		}
		var batch []kafka.Message
		flush := func() error {
			if len(batch) == 0 {
				return nil
			}
			if err := rec.Record(ctx, batch); err != nil {
				return err
			}
			n += len(batch)
			next[p] = batch[len(batch)-1].Offset + 1
			batch = batch[:0]
			return nil
		}
		err := r.readLog(ctx, r.cfg.OrdersTopic, p, from, end, func(m kafka.Message) error {
			batch = append(batch, m)
			if len(batch) == catchUpBatch {
				return flush()
			}
			return nil
		})
		if err == nil {
			err = flush()
		}
		if err != nil {
			return n, fmt.Errorf("record partition %d from offset %d: %w", p, next[p], err)
		}
		next[p] = end
	}
	return n, nil
}

// readLog hands fn every message of one partition of topic from offset first up to end.
func (r *run) readLog(ctx context.Context, topic string, partition int, first, end int64, fn func(kafka.Message) error) error {
	dialer, err := r.cfg.Kafka.Dialer(r.cfg.Timeout)
	if err != nil {
		return err
	}
	rd := kafka.NewReader(kafka.ReaderConfig{Brokers: r.cfg.Kafka.Brokers, Dialer: dialer, Topic: topic, Partition: partition,
		MinBytes: 1, MaxBytes: 10 << 20, MaxWait: 100 * time.Millisecond})
	defer rd.Close()
	if err := rd.SetOffset(first); err != nil {
		return err
	}
	for {
		fctx, cancel := context.WithTimeout(ctx, r.cfg.Timeout)
		m, err := rd.FetchMessage(fctx)
		cancel()
		if err != nil {
			return err
		}
		if err := fn(m); err != nil {
			return err
		}
		if m.Offset >= end-1 {
			return nil
		}
	}
}
