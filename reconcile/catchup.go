package reconcile

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/fsctl/fsctl/events"
	"github.com/fsctl/fsctl/ingest"
)

// DefaultInFlight is how long after a rebuild wiped Redis a hand-off begun before may still reach
// the order log: fsctl serve's publish timeout (5 s) and a second of margin.
const DefaultInFlight = 6 * time.Second

// catchUp brings PostgreSQL up to the order log for a rebuild, without waiting for the consumer
// group: it reads every event from the group's committed position on and records it with the
// consumer's own idempotent step (the group records the same events again later, as duplicates).
// A group held by a crashed instance, or behind by a burst, does not hold the sale down.
//
// It keeps reading until InFlight has passed since it began. The rebuild has wiped Redis by then,
// so no reservation can start; but one made just before may still be on its way to Kafka, and its
// buyer is told RESERVED once it lands. Recorded before the snapshot, its unit counts once;
// recorded after (by the group), Redis would sell that unit a second time, and PostgreSQL would
// refuse the second buyer's acknowledged order.
//
// Refused orders and payments are left to the group, which dead-letters them once.
func (r *run) catchUp(ctx context.Context) (int, error) {
	if r.kafka == nil {
		return 0, errNoBrokers
	}
	c := r.book
	rec := ingest.NewRecorder(c.db, c.st, nil, ingest.Metrics{}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	start := r.cfg.Now()
	until, giveUp := start.Add(r.cfg.InFlight), start.Add(r.cfg.DrainTimeout)
	var next map[int]int64 // each partition's next offset to record
	recorded := 0
	for {
		at := r.cfg.Now()
		committed, ends, err := r.logPositions(ctx)
		if err == nil {
			if next == nil {
				next = committed
			}
			var n int
			n, err = r.record(ctx, rec, next, ends)
			recorded += n
		}
		switch {
		case err == nil && !at.Before(until):
			fmt.Fprintf(r.cfg.Progress, "reconcile: recorded %d events from the order log in %s (group %s left to catch up)\n",
				recorded, r.cfg.Now().Sub(start).Round(time.Millisecond), r.cfg.ConsumerGroup)
			return recorded, nil
		case err != nil && r.cfg.Now().After(giveUp):
			return recorded, fmt.Errorf("the order log could not be read into PostgreSQL within %s: %w", r.cfg.DrainTimeout, err)
		case err != nil:
			fmt.Fprintf(r.cfg.Progress, "reconcile: catching up with the order log: %v; trying again\n", err)
		}
		pause := catchUpPoll
		if left := until.Sub(r.cfg.Now()); err == nil && left < pause {
			pause = max(left, 0)
		}
		select {
		case <-ctx.Done():
			return recorded, ctx.Err()
		case <-time.After(pause):
		}
	}
}

// logPositions reads each partition of the orders topic: the group's committed position (where
// none, the first offset) and the end.
func (r *run) logPositions(ctx context.Context) (committed, ends map[int]int64, err error) {
	g, err := events.GroupLag(ctx, r.kafka, r.cfg.OrdersTopic, r.cfg.ConsumerGroup)
	if err != nil {
		return nil, nil, err
	}
	committed, ends = map[int]int64{}, map[int]int64{}
	for _, p := range g.Partitions {
		committed[p.Partition], ends[p.Partition] = p.End-p.Lag, p.End
	}
	return committed, ends, nil
}

// catchUpPoll paces catch-up's reads of the log's ends.
const catchUpPoll = 250 * time.Millisecond

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
	rd := kafka.NewReader(kafka.ReaderConfig{Brokers: r.cfg.Brokers, Topic: topic, Partition: partition,
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
