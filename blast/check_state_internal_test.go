package blast

import (
	"testing"

	"github.com/fsctl/fsctl/internal/target/profile"
)

// TestGrantsMissing: a told order id counts as reached when it is among the buyer's orders in any
// status; a reservation told without an id needs an order no told id claims.
func TestGrantsMissing(t *testing.T) {
	g := &grants{ids: map[string]bool{"o1": true, "o2": true}, keys: map[string]bool{"k1": true}}
	for _, tc := range []struct {
		orders []profile.Order
		want   int64
	}{
		{[]profile.Order{{ID: "o1", Status: "PAID"}, {ID: "o2", Status: "CANCELLED"}, {ID: "o3", Status: "EXPIRED"}}, 0},
		{[]profile.Order{{ID: "o1"}, {ID: "o3"}}, 1},
		{[]profile.Order{{ID: "o1"}, {ID: "o2"}}, 1},
		{nil, 3},
	} {
		if got := g.missing(tc.orders); got != tc.want {
			t.Errorf("missing(%v) = %d, want %d", tc.orders, got, tc.want)
		}
	}
}
