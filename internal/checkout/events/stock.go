package events

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/fsctl/fsctl/internal/contract/sale"
	"github.com/fsctl/fsctl/internal/platform/kafkaconn"
)

// DefaultStockTopic is the compacted topic of stock snapshots that feeds the sale pages' read model.
const DefaultStockTopic = "fsctl.stock"

// TypeStockSnapshot tags a StockSnapshot.
const TypeStockSnapshot = "StockSnapshot"

// StockSnapshot is one item's remaining stock as read from Redis at ReadAt. Snapshots of an item
// share its key, so the compacted topic keeps the latest per item; ReadAt (Redis's own clock,
// read in the same round trip as the counters) orders them, because two publishers may publish
// in the other order than they read.
type StockSnapshot struct {
	Type      string    `json:"type"`
	SaleID    string    `json:"saleId"`
	ItemID    string    `json:"itemId"`
	Remaining int64     `json:"remaining"`
	ReadAt    time.Time `json:"readAt"`
}

// Key is the Kafka message key, sale/item: compaction keeps the latest snapshot of each item.
func (s StockSnapshot) Key() []byte { return []byte(s.SaleID + "/" + s.ItemID) }

// Newer reports whether s was read after old: the one that may replace it.
func (s StockSnapshot) Newer(old StockSnapshot) bool { return s.ReadAt.After(old.ReadAt) }

// Validate reports whether the snapshot names an item and a read time.
func (s StockSnapshot) Validate() error {
	switch {
	case s.Type != TypeStockSnapshot:
		return fmt.Errorf("type %q is not %s", s.Type, TypeStockSnapshot)
	case !sale.ValidSlug(s.SaleID) || !sale.ValidSlug(s.ItemID):
		return errors.New("saleId and itemId must be slugs")
	case s.ReadAt.IsZero():
		return errors.New("readAt is required")
	}
	return nil
}

// EncodeStockSnapshot returns the Kafka message of a snapshot.
func EncodeStockSnapshot(s StockSnapshot) (kafka.Message, error) {
	s.Type = TypeStockSnapshot
	b, err := json.Marshal(s)
	if err != nil {
		return kafka.Message{}, fmt.Errorf("encode stock snapshot %s/%s: %w", s.SaleID, s.ItemID, err)
	}
	return kafka.Message{Key: s.Key(), Value: b}, nil
}

// DecodeStockSnapshot parses and validates a snapshot message's value.
func DecodeStockSnapshot(b []byte) (StockSnapshot, error) {
	var s StockSnapshot
	if err := json.Unmarshal(b, &s); err != nil {
		return StockSnapshot{}, fmt.Errorf("decode stock snapshot: %w", err)
	}
	if err := s.Validate(); err != nil {
		return StockSnapshot{}, fmt.Errorf("stock snapshot: %w", err)
	}
	return s, nil
}

// EnsureCompactedTopic creates topic, compacted (cleanup.policy=compact), if it does not exist: a
// topic that keeps the latest message per key forever, so a reader that starts from its beginning
// learns every key's current value. An existing topic is left as it is.
func EnsureCompactedTopic(ctx context.Context, conn kafkaconn.Conn, topic string, partitions int) error {
	return ensureTopic(ctx, conn, topic, partitions, kafka.ConfigEntry{ConfigName: "cleanup.policy", ConfigValue: "compact"})
}
