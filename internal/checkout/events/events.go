// Package events defines the order events that travel through Kafka between the reserve path and
// the order consumer, and the producer that publishes them with acks from all in-sync replicas.
package events

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/fsctl/fsctl/internal/contract/sale"
)

// Default names of the order log: its topics and the consumer group.
const (
	DefaultOrdersTopic     = "fsctl.orders"
	DefaultDeadLetterTopic = "fsctl.orders.dlq"
	// DefaultConsumerGroup is the group of the bundled server's order consumers.
	DefaultConsumerGroup = "fsctl-order-consumer"
)

// Type tags of the events on the orders topic.
const (
	TypeOrderPlaced = "OrderPlaced"
	TypeOrderPaid   = "OrderPaid"
)

// Event is one message of the orders topic: *OrderPlaced or *OrderPaid. Both are keyed by item, so
// an order's OrderPaid always follows its OrderPlaced in the same partition.
type Event interface {
	Key() []byte
	Validate() error
}

// OrderPlaced says that a unit was reserved in Redis for a buyer and must become an order row.
type OrderPlaced struct {
	Type    string    `json:"type"`
	OrderID uuid.UUID `json:"orderId"`
	SaleID  string    `json:"saleId"`
	ItemID  string    `json:"itemId"`
	UserID  string    `json:"userId"`
	Slot    int       `json:"slot"`
	// Shard is the stock shard that holds the unit (the buyer's home shard), of the item's Shards
	// (0 or 1: unsharded); a shard's keys depend on both.
	Shard     int       `json:"shard,omitempty"`
	Shards    int       `json:"shards,omitempty"`
	CreatedAt time.Time `json:"createdAt"`
	ExpiresAt time.Time `json:"expiresAt"`
	// IdemKey is the buyer's Idempotency-Key, so a refused order's key can be forgotten and the
	// buyer's retry is a fresh attempt.
	IdemKey string `json:"idemKey,omitempty"`
	// Epoch is the generation of the Redis state the unit was reserved on (sale.Item.Epoch);
	// PostgreSQL drops the order as stale when a rebuild has replaced that state since.
	Epoch int64 `json:"epoch,omitempty"`
	// SaleSlot is the per-sale claim slot the order holds (stock's claims; PostgreSQL's
	// orders.sale_slot), absent for a sale without a per-sale limit.
	SaleSlot *int `json:"saleSlot,omitempty"`
}

// ClaimSlot is an order's per-sale claim slot as OrderPlaced.SaleSlot carries it: nil when the
// order holds none.
func ClaimSlot(claimed bool, slot int) *int {
	if !claimed {
		return nil
	}
	return &slot
}

// Key is the Kafka message key: all orders of one item go to one partition, in order.
func (e OrderPlaced) Key() []byte { return []byte(e.SaleID + "/" + e.ItemID) }

// Validate reports whether the event can become an order row.
func (e OrderPlaced) Validate() error {
	if err := validateOrder(e.Type, TypeOrderPlaced, e.OrderID, e.SaleID, e.ItemID, e.UserID, e.Shard, e.Shards); err != nil {
		return err
	}
	switch {
	case e.Slot < 0 || e.Slot >= sale.MaxPerUserLimit:
		return fmt.Errorf("slot %d out of range", e.Slot)
	case e.SaleSlot != nil && (*e.SaleSlot < 0 || *e.SaleSlot >= sale.MaxPerSaleLimit):
		return fmt.Errorf("saleSlot %d out of range", *e.SaleSlot)
	case len(e.IdemKey) > 128:
		return errors.New("idemKey longer than 128 bytes")
	case e.CreatedAt.IsZero() || e.ExpiresAt.IsZero():
		return errors.New("createdAt and expiresAt are required")
	}
	return nil
}

// OrderPaid says that the payment provider charged a claimed order: it must become PAID.
type OrderPaid struct {
	Type       string    `json:"type"`
	OrderID    uuid.UUID `json:"orderId"`
	SaleID     string    `json:"saleId"`
	ItemID     string    `json:"itemId"`
	UserID     string    `json:"userId"`
	Shard      int       `json:"shard,omitempty"`
	Shards     int       `json:"shards,omitempty"`
	PaymentRef string    `json:"paymentRef"`
	PaidAt     time.Time `json:"paidAt"`
}

// Key is the Kafka message key, the same as the order's OrderPlaced.
func (e OrderPaid) Key() []byte { return []byte(e.SaleID + "/" + e.ItemID) }

// Validate reports whether the event can mark an order paid.
func (e OrderPaid) Validate() error {
	if err := validateOrder(e.Type, TypeOrderPaid, e.OrderID, e.SaleID, e.ItemID, e.UserID, e.Shard, e.Shards); err != nil {
		return err
	}
	switch {
	case len(e.PaymentRef) > 128:
		return errors.New("paymentRef longer than 128 bytes")
	case e.PaidAt.IsZero():
		return errors.New("paidAt is required")
	}
	return nil
}

// validateOrder checks what every order event carries: its type tag and which order it is about.
func validateOrder(typ, want string, id uuid.UUID, saleID, itemID, userID string, shard, shards int) error {
	switch {
	case typ != want:
		return fmt.Errorf("event type %q, want %s", typ, want)
	case id == uuid.Nil:
		return errors.New("orderId missing")
	case !sale.ValidSlug(saleID) || !sale.ValidSlug(itemID):
		return fmt.Errorf("invalid sale/item %q/%q", saleID, itemID)
	case !sale.ValidUserID(userID):
		return errors.New("invalid userId")
	case shards < 0 || shards > sale.MaxShards:
		return fmt.Errorf("shards %d out of range 0..%d", shards, sale.MaxShards)
	case shard < 0 || shard >= max(shards, 1):
		return fmt.Errorf("shard %d out of range of %d shards", shard, max(shards, 1))
	}
	return nil
}

// DecodeOrderPlaced parses and validates an OrderPlaced message value.
func DecodeOrderPlaced(b []byte) (OrderPlaced, error) {
	e, err := Decode(b)
	if err != nil {
		return OrderPlaced{}, err
	}
	p, ok := e.(*OrderPlaced)
	if !ok {
		return OrderPlaced{}, fmt.Errorf("decode OrderPlaced: got a %T", e)
	}
	return *p, nil
}

// Decode parses and validates a message of the orders topic by its type tag.
func Decode(b []byte) (Event, error) {
	if e := decodeTagged(b); e != nil {
		return e, nil
	}
	var head struct {
		Type string `json:"type"`
	}
	if err := json.Unmarshal(b, &head); err != nil {
		return nil, fmt.Errorf("decode event: %w", err)
	}
	var e Event
	switch head.Type {
	case TypeOrderPlaced:
		e = &OrderPlaced{}
	case TypeOrderPaid:
		e = &OrderPaid{}
	default:
		return nil, fmt.Errorf("decode event: unknown type %q", head.Type)
	}
	if err := json.Unmarshal(b, e); err != nil {
		return nil, fmt.Errorf("decode %s: %w", head.Type, err)
	}
	if err := e.Validate(); err != nil {
		return nil, fmt.Errorf("decode %s: %w", head.Type, err)
	}
	return e, nil
}

// decodeTagged is Decode's one pass for a message that opens with its type tag, as every message
// this package publishes does: it returns the valid event, or nil when the message must take
// Decode's general way (a tag elsewhere or spelt with escapes, a second "type" key, a message not
// decoded or not valid), so Decode's answer, and its error, is the same either way. Reading the
// tag first and then the event parsed each message twice: half the consumer's decoding.
func decodeTagged(b []byte) Event {
	const open = `{"type":"`
	if len(b) < len(open) || string(b[:len(open)]) != open {
		return nil
	}
	var e Event
	switch rest := b[len(open):]; {
	case hasTag(rest, TypeOrderPlaced):
		e = &OrderPlaced{}
	case hasTag(rest, TypeOrderPaid):
		e = &OrderPaid{}
	default:
		return nil
	}
	if json.Unmarshal(b, e) != nil || e.Validate() != nil {
		return nil
	}
	return e
}

// hasTag reports whether b, what follows the tag's opening quote, is tag, its closing quote, and
// the end of the tag's member (a comma or the object's close).
func hasTag(b []byte, tag string) bool {
	return len(b) > len(tag)+1 && string(b[:len(tag)]) == tag && b[len(tag)] == '"' &&
		(b[len(tag)+1] == ',' || b[len(tag)+1] == '}')
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

// LogNames returns the order log's topics and consumer group, with the bundled server's names in
// place of those left empty.
func LogNames(orders, deadLetter, group string) (string, string, string) {
	return cmp.Or(orders, DefaultOrdersTopic), cmp.Or(deadLetter, DefaultDeadLetterTopic), cmp.Or(group, DefaultConsumerGroup)
}
