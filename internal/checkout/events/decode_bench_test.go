package events

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/google/uuid"
)

// placedMessage is an OrderPlaced as the bundled server publishes it: every field a burst's order
// carries.
func placedMessage(tb testing.TB) []byte {
	tb.Helper()
	e := OrderPlaced{Type: TypeOrderPlaced, OrderID: uuid.Must(uuid.NewV7()), SaleID: "black-friday", ItemID: "console",
		UserID: "buyer-0000123456", Slot: 0, Shard: 2, Shards: 4, CreatedAt: time.Now().UTC(),
		ExpiresAt: time.Now().Add(10 * time.Minute).UTC(), IdemKey: uuid.NewString(), Epoch: 1764900000000}
	b, err := json.Marshal(e)
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

// BenchmarkDecodeOrderPlaced is the order consumer's cost of reading one message of the orders
// topic (the in-process consumer shares fsctl serve's CPU with the purchases): Decode beside the
// two passes it used before (decodeTwoPasses, the tag first and then the event), in the same run.
func BenchmarkDecodeOrderPlaced(b *testing.B) {
	msg := placedMessage(b)
	for _, way := range []struct {
		name   string
		decode func([]byte) (Event, error)
	}{{"way=decode", Decode}, {"way=two-passes", decodeTwoPasses}} {
		b.Run(way.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := way.decode(msg); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
