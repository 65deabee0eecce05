package ingest

import (
	"encoding/json"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/fsctl/fsctl/internal/checkout/events"
)

// Dead-letter reasons of payments that could not be recorded.
const (
	ReasonPaidUnknown = "paid_unknown_order"
	ReasonPaidClosed  = "paid_closed_order"
)

// ReasonRejected is the dead-letter reason of an order PostgreSQL refused to store at all.
const ReasonRejected = "rejected"

// deadLetter wraps m for the dead-letter topic; reason is a short category (a metric label),
// detail the specific error.
func deadLetter(m kafka.Message, reason, detail string) kafka.Message {
	dl := events.DeadLetter{Reason: reason, Detail: detail, Topic: m.Topic, Partition: m.Partition, Offset: m.Offset, At: time.Now().UTC()}
	if json.Valid(m.Value) {
		dl.Value = m.Value
	} else {
		dl.Raw = m.Value
	}
	b, err := json.Marshal(dl)
	if err != nil {
		b = []byte(`{"reason":"unencodable dead letter"}`)
	}
	return kafka.Message{Key: m.Key, Value: b, Headers: []kafka.Header{{Key: "reason", Value: []byte(reason)}}}
}

func headerValue(m kafka.Message, key string) string {
	for _, h := range m.Headers {
		if h.Key == key {
			return string(h.Value)
		}
	}
	return ""
}
