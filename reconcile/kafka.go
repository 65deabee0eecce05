package reconcile

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/fsctl/fsctl/events"
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

// drain waits until the order consumer has committed everything on the orders topic.
func (c *conns) drain(ctx context.Context) error {
	if c.kafka == nil {
		return errNoBrokers
	}
	deadline := time.Now().Add(c.cfg.DrainTimeout)
	for {
		g, err := events.GroupLag(ctx, c.kafka, c.cfg.OrdersTopic, c.cfg.ConsumerGroup)
		switch {
		case err == nil && g.Lag == 0:
			fmt.Fprintf(c.cfg.Progress, "reconcile: the order log is drained (group %s)\n", g.Group)
			return nil
		case time.Now().After(deadline):
			if err == nil {
				err = fmt.Errorf("%d orders still in Kafka, %d consumer(s) in group %s", g.Lag, g.Members, g.Group)
			}
			return fmt.Errorf("the order log did not drain within %s (is a consumer running?): %w", c.cfg.DrainTimeout, err)
		case err == nil:
			fmt.Fprintf(c.cfg.Progress, "reconcile: waiting for %d orders to reach PostgreSQL (%d consumer(s))\n", g.Lag, g.Members)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Second):
		}
	}
}

var errNoBrokers = errors.New("--rebuild-redis needs --kafka-brokers: the order log must drain into PostgreSQL first")
