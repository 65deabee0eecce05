package reconcile

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/fsctl/fsctl/events"
	"github.com/fsctl/fsctl/verify"
)

// maxDeadLetters bounds how many dead letters are read to count the sale's own.
const maxDeadLetters = 100_000

// KafkaReport is the order log's side of a sale.
type KafkaReport struct {
	// Group is the order consumer; its lag is orders still on their way to PostgreSQL.
	Group events.GroupState `json:"consumer"`
	// DeadLetters counts this sale's messages on the dead-letter topic, of DeadLettersTotal.
	DeadLetters      int64 `json:"deadLetters"`
	DeadLettersTotal int64 `json:"deadLettersTotal"`
	// DeadLetterTopic is the topic counted; empty when the target declares none.
	DeadLetterTopic string `json:"deadLetterTopic,omitempty"`
	Error           string `json:"error,omitempty"`
}

// countDeadLetters reads the dead-letter topic (it is small when things go well) and counts the
// messages keyed by one of the sale's items.
func (r *run) countDeadLetters(ctx context.Context, offs events.Offsets) (int64, error) {
	if offs.Messages() == 0 {
		return 0, nil
	}
	if offs.Messages() > maxDeadLetters {
		return 0, fmt.Errorf("%d dead letters: too many to count the sale's own", offs.Messages())
	}
	var n int64
	prefix := []byte(r.cfg.SaleID + "/")
	for p, end := range offs.End {
		first := offs.First[p]
		if end <= first {
			continue
		}
		r := kafka.NewReader(kafka.ReaderConfig{Brokers: r.cfg.Brokers, Topic: r.cfg.DeadLetterTopic, Partition: p,
			MinBytes: 1, MaxBytes: 10 << 20, MaxWait: 100 * time.Millisecond})
		if err := r.SetOffset(first); err != nil {
			_ = r.Close()
			return n, err
		}
		for {
			m, err := r.FetchMessage(ctx)
			if err != nil {
				_ = r.Close()
				return n, fmt.Errorf("read dead letters of partition %d: %w", p, err)
			}
			if len(m.Key) >= len(prefix) && string(m.Key[:len(prefix)]) == string(prefix) {
				n++
			}
			if m.Offset >= end-1 {
				break
			}
		}
		_ = r.Close()
	}
	return n, nil
}

// drain waits until the order consumer has committed every event that was on the orders topic
// when the drain began: every order placed before the rebuild wiped Redis is in PostgreSQL then.
// It does not wait for the lag to be 0, which a sale under way may never show at the moment of a
// poll (payments and re-published holds keep arriving), so a rebuild mid-sale is not held until
// the sale goes quiet.
func (r *run) drain(ctx context.Context) error {
	if r.kafka == nil {
		return errNoBrokers
	}
	var mark map[int]int64 // each partition's end offset at the first good read
	var g events.GroupState
	var lastErr error
	waiting, err := verify.Settle(ctx, r.cfg.DrainTimeout, drainPoll, func(ctx context.Context) ([]string, error) {
		g, lastErr = events.GroupLag(ctx, r.kafka, r.cfg.OrdersTopic, r.cfg.ConsumerGroup)
		if lastErr != nil {
			return []string{lastErr.Error()}, nil
		}
		if mark == nil {
			mark = map[int]int64{}
			for _, p := range g.Partitions {
				mark[p.Partition] = p.End
			}
		}
		behind := behindMark(g, mark)
		if behind == 0 {
			return nil, nil
		}
		fmt.Fprintf(r.cfg.Progress, "reconcile: waiting for %d orders to reach PostgreSQL (%d consumer(s))\n", behind, g.Members)
		lastErr = fmt.Errorf("%d orders still in Kafka, %d consumer(s) in group %s", behind, g.Members, g.Group)
		return []string{lastErr.Error()}, nil
	})
	switch {
	case err != nil:
		return err
	case len(waiting) > 0:
		return fmt.Errorf("the order log did not drain within %s (is a consumer running?): %w", r.cfg.DrainTimeout, lastErr)
	}
	fmt.Fprintf(r.cfg.Progress, "reconcile: the order log is drained up to where it stood (group %s)\n", g.Group)
	return nil
}

// drainPoll paces drain's reads of the group's offsets.
const drainPoll = 250 * time.Millisecond

// behindMark counts the events the group has yet to commit before reaching mark (a partition's
// position is its end offset less its lag).
func behindMark(g events.GroupState, mark map[int]int64) int64 {
	var n int64
	for _, p := range g.Partitions {
		if m, ok := mark[p.Partition]; ok {
			n += max(m-(p.End-p.Lag), 0)
		}
	}
	return n
}

var errNoBrokers = errors.New("--rebuild-redis needs --kafka-brokers: the order log must drain into PostgreSQL first")
