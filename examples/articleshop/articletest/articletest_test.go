package articletest

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/fsctl/fsctl/internal/target/profile"
)

// TestProfileReadsTheShop is the shipped profile against the shop it describes: purchases
// through its template and token, then every query and key read back the same numbers.
func TestProfileReadsTheShop(t *testing.T) {
	t.Parallel()
	s := Start(t, 5)
	item := s.Items[0]
	var wg sync.WaitGroup
	statuses := make([]int, 8)
	for i := range statuses {
		wg.Go(func() { statuses[i], _ = s.Buy(fmt.Sprintf("buyer-%d", i), item) })
	}
	wg.Wait()
	if again, body := s.Buy("buyer-0", item); again != 409 && again != 410 {
		t.Fatalf("second purchase of one buyer: %d %s", again, body)
	}
	counts := map[int]int{}
	for _, st := range statuses {
		counts[st]++
	}
	if counts[202] != 5 || counts[410] != 3 {
		t.Fatalf("statuses %v, want 5×202 and 3×410", counts)
	}
	s.WaitOrders(item, 5)

	ctx := context.Background()
	tg, err := profile.Connect(ctx, s.Profile, s.RedisURL, s.PostgresURL)
	if err != nil {
		t.Fatal(err)
	}
	defer tg.Close()
	items, err := tg.Items(ctx, s.Sale, nil)
	if err != nil || len(items) != 1 || items[0] != item {
		t.Fatalf("items %v %v", items, err)
	}
	st, err := tg.State(ctx, s.Sale, item)
	if err != nil {
		t.Fatal(err)
	}
	if st.Quantity != 5 || st.Sold != 5 || st.Live != 5 || !st.HasPaid || st.Paid != 0 || st.Stock != 0 || st.Buyers != 5 || st.Shards != 1 {
		t.Fatalf("state %+v", st)
	}
	buyers, err := tg.Stocks.Buyers(ctx, s.Sale, item, 1)
	live, ok, lerr := tg.DB.LiveBuyers(ctx, s.Sale, item)
	if err != nil || lerr != nil || !ok || len(buyers) != 5 || len(live) != 5 {
		t.Fatalf("buyers %v (%v), live buyers %v (%v)", buyers, err, live, lerr)
	}
	for u := range buyers {
		orders, err := tg.DB.UserOrders(ctx, s.Sale, item, u)
		if err != nil || len(orders) != 1 || !s.Profile.IsLive(orders[0].Status) || live[u] != 1 {
			t.Fatalf("user %s: orders %v %v, live %d", u, orders, err, live[u])
		}
	}
}
