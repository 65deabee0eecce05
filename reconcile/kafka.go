package reconcile

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	"github.com/fsctl/fsctl/internal/platform/kafkaconn"
	"github.com/segmentio/kafka-go"
)

// maxDeadLetters bounds how many dead letters are read to count the sale's own.
const maxDeadLetters = 100_000

// KafkaReport is the order log's side of a sale.
type KafkaReport struct {
	// Group is the order consumer; its lag is orders still on their way to PostgreSQL.
	Group kafkaconn.GroupState `json:"consumer"`
	// DeadLetters counts this sale's messages on the dead-letter topic, of DeadLettersTotal.
	DeadLetters      int64 `json:"deadLetters"`
	DeadLettersTotal int64 `json:"deadLettersTotal"`
	// DeadLetterTopic is the topic counted; empty when the target declares none.
	DeadLetterTopic string `json:"deadLetterTopic,omitempty"`
	Error           string `json:"error,omitempty"`
}

// countDeadLetters reads the dead-letter topic (it is small when things go well) and counts the
// messages keyed by one of the sale's items.
func (r *run) countDeadLetters(ctx context.Context, offs kafkaconn.Offsets) (int64, error) {
	if offs.Messages() == 0 {
		return 0, nil
	}
	if offs.Messages() > maxDeadLetters {
		return 0, fmt.Errorf("%d dead letters: too many to count the sale's own", offs.Messages())
	}
	var n int64
	prefix := []byte(r.cfg.SaleID + "/")
	for p, end := range offs.End {
		if first := offs.First[p]; end > first {
			err := r.readLog(ctx, r.cfg.DeadLetterTopic, p, first, end, func(m kafka.Message) error {
				if bytes.HasPrefix(m.Key, prefix) {
					n++
				}
				return nil
			})
			if err != nil {
				return n, fmt.Errorf("read dead letters of partition %d: %w", p, err)
			}
		}
	}
	return n, nil
}

var errNoBrokers = errors.New("--rebuild-redis needs --kafka-brokers: the order log must be recorded in PostgreSQL first")
