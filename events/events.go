// Package events defines the order events that travel through Kafka between the reserve path and
// the order consumer, and the producer that publishes them with acks from all in-sync replicas.
package events

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/fsctl/fsctl/sale"
)

// Default topic names.
const (
	DefaultOrdersTopic     = "fsctl.orders"
	DefaultDeadLetterTopic = "fsctl.orders.dlq"
)

// TypeOrderPlaced is the type tag of an OrderPlaced event.
const TypeOrderPlaced = "OrderPlaced"

// OrderPlaced says that a unit was reserved in Redis for a buyer and must become an order row.
type OrderPlaced struct {
	Type      string    `json:"type"`
	OrderID   uuid.UUID `json:"orderId"`
	SaleID    string    `json:"saleId"`
	ItemID    string    `json:"itemId"`
	UserID    string    `json:"userId"`
	Slot      int       `json:"slot"`
	CreatedAt time.Time `json:"createdAt"`
	ExpiresAt time.Time `json:"expiresAt"`
}

// Key is the Kafka message key: all orders of one item go to one partition, in order.
func (e OrderPlaced) Key() []byte { return []byte(e.SaleID + "/" + e.ItemID) }

// Validate reports whether the event can become an order row.
func (e OrderPlaced) Validate() error {
	switch {
	case e.Type != TypeOrderPlaced:
		return fmt.Errorf("event type %q, want %s", e.Type, TypeOrderPlaced)
	case e.OrderID == uuid.Nil:
		return errors.New("orderId missing")
	case !sale.ValidSlug(e.SaleID) || !sale.ValidSlug(e.ItemID):
		return fmt.Errorf("invalid sale/item %q/%q", e.SaleID, e.ItemID)
	case !sale.ValidUserID(e.UserID):
		return errors.New("invalid userId")
	case e.Slot < 0 || e.Slot >= sale.MaxPerUserLimit:
		return fmt.Errorf("slot %d out of range", e.Slot)
	case e.CreatedAt.IsZero() || e.ExpiresAt.IsZero():
		return errors.New("createdAt and expiresAt are required")
	}
	return nil
}

// DecodeOrderPlaced parses and validates an OrderPlaced message value.
func DecodeOrderPlaced(b []byte) (OrderPlaced, error) {
	var e OrderPlaced
	if err := json.Unmarshal(b, &e); err != nil {
		return OrderPlaced{}, fmt.Errorf("decode OrderPlaced: %w", err)
	}
	if err := e.Validate(); err != nil {
		return OrderPlaced{}, fmt.Errorf("decode OrderPlaced: %w", err)
	}
	return e, nil
}

// DeadLetter is what the consumer writes to the dead-letter topic for a message the database
// refused or that could not be decoded.
type DeadLetter struct {
	Reason    string          `json:"reason"`
	Detail    string          `json:"detail,omitempty"`
	Topic     string          `json:"topic"`
	Partition int             `json:"partition"`
	Offset    int64           `json:"offset"`
	Value     json.RawMessage `json:"value,omitempty"`
	Raw       []byte          `json:"raw,omitempty"`
	At        time.Time       `json:"at"`
}
