package reconcile

import (
	"context"
	"errors"
	"fmt"
	"strings"
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

func (c *conns) kafkaReport(ctx context.Context, saleID string) *KafkaReport {
	ctx, cancel := context.WithTimeout(ctx, 2*c.cfg.Timeout)
	defer cancel()
	k := &KafkaReport{DeadLetterTopic: c.cfg.DeadLetterTopic}
	var errs []string
	g, err := events.GroupLag(ctx, c.kafka, c.cfg.OrdersTopic, c.cfg.ConsumerGroup)
	if err != nil {
		errs = append(errs, err.Error())
	}
	k.Group = g
	offs, err := events.TopicOffsets(ctx, c.kafka, c.cfg.DeadLetterTopic)
	if err == nil {
		k.DeadLettersTotal = offs.Messages()
		k.DeadLetters, err = c.countDeadLetters(ctx, offs, saleID)
	}
	if err != nil {
		errs = append(errs, err.Error())
	}
	k.Error = strings.Join(errs, "; ")
	return k
}

// countDeadLetters reads the dead-letter topic (it is small when things go well) and counts the
// messages keyed by one of the sale's items.
func (c *conns) countDeadLetters(ctx context.Context, offs events.Offsets, saleID string) (int64, error) {
	if offs.Messages() == 0 {
		return 0, nil
	}
	if offs.Messages() > maxDeadLetters {
		return 0, fmt.Errorf("%d dead letters: too many to count the sale's own", offs.Messages())
	}
	var n int64
	prefix := []byte(saleID + "/")
	for p, end := range offs.End {
		first := offs.First[p]
		if end <= first {
			continue
		}
		r := kafka.NewReader(kafka.ReaderConfig{Brokers: c.cfg.Brokers, Topic: c.cfg.DeadLetterTopic, Partition: p,
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
func (c *conns) drain(ctx context.Context) error {
	if c.kafka == nil {
		return errNoBrokers
	}
	var mark map[int]int64 // each partition's end offset at the first good read
	var g events.GroupState
	var lastErr error
	waiting, err := verify.Settle(ctx, c.cfg.DrainTimeout, drainPoll, func(ctx context.Context) ([]string, error) {
		g, lastErr = events.GroupLag(ctx, c.kafka, c.cfg.OrdersTopic, c.cfg.ConsumerGroup)
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
		fmt.Fprintf(c.cfg.Progress, "reconcile: waiting for %d orders to reach PostgreSQL (%d consumer(s))\n", behind, g.Members)
		lastErr = fmt.Errorf("%d orders still in Kafka, %d consumer(s) in group %s", behind, g.Members, g.Group)
		return []string{lastErr.Error()}, nil
	})
	switch {
	case err != nil:
		return err
	case len(waiting) > 0:
		return fmt.Errorf("the order log did not drain within %s (is a consumer running?): %w", c.cfg.DrainTimeout, lastErr)
	}
	fmt.Fprintf(c.cfg.Progress, "reconcile: the order log is drained up to where it stood (group %s)\n", g.Group)
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
