package events

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
)

func TestOrderPlacedRoundTrip(t *testing.T) {
	e := OrderPlaced{Type: TypeOrderPlaced, OrderID: uuid.Must(uuid.NewV7()), SaleID: "s", ItemID: "i", UserID: "u@x",
		Slot: 2, CreatedAt: time.Unix(1, 0).UTC(), ExpiresAt: time.Unix(600, 0).UTC()}
	b, err := json.Marshal(e)
	if err != nil {
		t.Fatal(err)
	}
	got, err := DecodeOrderPlaced(b)
	if err != nil || got != e {
		t.Fatalf("round trip: %+v %v, want %+v", got, err, e)
	}
	if string(e.Key()) != "s/i" {
		t.Fatalf("key %q", e.Key())
	}
	for name, bad := range map[string]string{
		"wrong type": `{"type":"Other"}`,
		"no order":   `{"type":"OrderPlaced","saleId":"s","itemId":"i","userId":"u","createdAt":"2026-01-01T00:00:00Z","expiresAt":"2026-01-01T00:00:00Z"}`,
		"bad slot":   `{"type":"OrderPlaced","orderId":"` + e.OrderID.String() + `","saleId":"s","itemId":"i","userId":"u","slot":99,"createdAt":"2026-01-01T00:00:00Z","expiresAt":"2026-01-01T00:00:00Z"}`,
		"not json":   `nope`,
	} {
		if _, err := DecodeOrderPlaced([]byte(bad)); err == nil {
			t.Errorf("%s: accepted %s", name, bad)
		}
	}
}

// FuzzDecodeOrderPlaced checks the consumer's decoder never panics and only passes valid events.
func FuzzDecodeOrderPlaced(f *testing.F) {
	f.Add([]byte(`{"type":"OrderPlaced","orderId":"0190c0de-7b1a-7000-8000-000000000000","saleId":"s","itemId":"i","userId":"u","slot":0,"createdAt":"2026-01-01T00:00:00Z","expiresAt":"2026-01-01T00:10:00Z"}`))
	f.Add([]byte(`{}`))
	f.Add([]byte{0xff, 0x00})
	f.Add([]byte(`{"type":"OrderPaid","orderId":"0190c0de-7b1a-7000-8000-000000000000","saleId":"s","itemId":"i","userId":"u","shard":3,"paymentRef":"ch_1","paidAt":"2026-01-01T00:00:00Z"}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		e, err := DecodeOrderPlaced(b)
		if err == nil && e.Validate() != nil {
			t.Fatalf("decoded an invalid event %+v", e)
		}
		ev, err := Decode(b)
		if err == nil && ev.Validate() != nil {
			t.Fatalf("decoded an invalid event %+v", ev)
		}
	})
}

func TestDecodeOrderPaid(t *testing.T) {
	e := OrderPaid{Type: TypeOrderPaid, OrderID: uuid.Must(uuid.NewV7()), SaleID: "s", ItemID: "i", UserID: "u",
		Shard: 3, Shards: 4, PaymentRef: "ch_1", PaidAt: time.Unix(5, 0).UTC()}
	b, err := json.Marshal(e)
	if err != nil {
		t.Fatal(err)
	}
	got, err := Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	if p, ok := got.(*OrderPaid); !ok || *p != e {
		t.Fatalf("decoded %#v, want %+v", got, e)
	}
	if _, err := DecodeOrderPlaced(b); err == nil {
		t.Fatal("an OrderPaid decoded as OrderPlaced")
	}
	for name, bad := range map[string]string{
		"no paidAt":  `{"type":"OrderPaid","orderId":"` + e.OrderID.String() + `","saleId":"s","itemId":"i","userId":"u"}`,
		"bad shard":  `{"type":"OrderPaid","orderId":"` + e.OrderID.String() + `","saleId":"s","itemId":"i","userId":"u","shard":64,"paidAt":"2026-01-01T00:00:00Z"}`,
		"wrong type": `{"type":"OrderShipped"}`,
	} {
		if _, err := Decode([]byte(bad)); err == nil {
			t.Errorf("%s: accepted %s", name, bad)
		}
	}
}

func TestLogNames(t *testing.T) {
	o, d, g := LogNames("", "", "")
	if o != DefaultOrdersTopic || d != DefaultDeadLetterTopic || g != DefaultConsumerGroup {
		t.Fatalf("defaults: %s %s %s", o, d, g)
	}
	if o, d, g = LogNames("a", "b", "c"); o != "a" || d != "b" || g != "c" {
		t.Fatalf("given names replaced: %s %s %s", o, d, g)
	}
}

// decodeTwoPasses is Decode as it was before its one-pass way for tagged messages: the tag read
// first, then the event. Decode must answer as it does, for every message.
func decodeTwoPasses(b []byte) (Event, error) {
	var head struct {
		Type string `json:"type"`
	}
	if err := json.Unmarshal(b, &head); err != nil {
		return nil, err
	}
	var e Event
	switch head.Type {
	case TypeOrderPlaced:
		e = &OrderPlaced{}
	case TypeOrderPaid:
		e = &OrderPaid{}
	default:
		return nil, errors.New("unknown type")
	}
	if err := json.Unmarshal(b, e); err != nil {
		return nil, err
	}
	if err := e.Validate(); err != nil {
		return nil, err
	}
	return e, nil
}

// FuzzDecodeAgreesWithTwoPasses checks that Decode's one pass for a message opening with its type
// tag decodes, or refuses, exactly what reading the tag first and the event second does: the same
// event, or an error for both (a second "type" key, a tag spelt with escapes, a field of the wrong
// kind after a good tag).
func FuzzDecodeAgreesWithTwoPasses(f *testing.F) {
	placed := `{"type":"OrderPlaced","orderId":"0190c0de-7b1a-7000-8000-000000000000","saleId":"s","itemId":"i","userId":"u","slot":0,"createdAt":"2026-01-01T00:00:00Z","expiresAt":"2026-01-01T00:10:00Z"}`
	paid := `{"type":"OrderPaid","orderId":"0190c0de-7b1a-7000-8000-000000000000","saleId":"s","itemId":"i","userId":"u","shard":3,"shards":4,"paymentRef":"ch_1","paidAt":"2026-01-01T00:00:00Z"}`
	for _, s := range []string{
		placed, paid,
		strings.Replace(placed, `"slot":0`, `"slot":0,"type":"OrderPaid"`, 1),
		strings.Replace(paid, `"shard":3`, `"shard":3,"type":"OrderPlaced","createdAt":"2026-01-01T00:00:00Z","expiresAt":"2026-01-01T00:10:00Z"`, 1),
		strings.Replace(placed, `"OrderPlaced"`, `"Order\u0050laced"`, 1),
		strings.Replace(placed, `"slot":0`, `"slot":"0"`, 1),
		strings.Replace(placed, `"slot":0`, `"type":5`, 1),
		`{"type":"OrderPlaced"}`, `{"type":"OrderPlaced"`, `{"type":"OrderPlacedX"}`, `{}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		got, err := Decode(b)
		want, wantErr := decodeTwoPasses(b)
		if (err == nil) != (wantErr == nil) || !reflect.DeepEqual(got, want) {
			t.Fatalf("Decode(%q) = %+v, %v; two passes: %+v, %v", b, got, err, want, wantErr)
		}
	})
}

// TestDecodeTakesTheLastTypeKey pins the case the one pass must hand back to the general way: a
// message opening with one tag and naming the other later is the later one, as encoding/json reads
// a repeated key.
func TestDecodeTakesTheLastTypeKey(t *testing.T) {
	paid := `{"type":"OrderPlaced","orderId":"0190c0de-7b1a-7000-8000-000000000000","saleId":"s","itemId":"i","userId":"u","paymentRef":"ch_1","paidAt":"2026-01-01T00:00:00Z","type":"OrderPaid"}`
	e, err := Decode([]byte(paid))
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := e.(*OrderPaid); !ok {
		t.Fatalf("decoded a %T, want *OrderPaid", e)
	}
}
