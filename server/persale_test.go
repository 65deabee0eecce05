package server_test

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/fsctl/fsctl/internal/checkout/stock"
	"github.com/fsctl/fsctl/internal/contract/sale"
	"github.com/fsctl/fsctl/internal/proof/verify"
)

func newPerSaleEnv(t *testing.T, quantity int64, remote bool) *env {
	t.Helper()
	return newEnvWith(t, envOptions{Quantity: quantity, Limit: 1, PerSaleLimit: 1, Remote: remote,
		ExtraItems: []sale.Item{{ID: "cold", Quantity: quantity, PriceCents: 999}, {ID: "wide", Quantity: quantity, Shards: 4}}})
}

func (e *env) buyItem(item, user, key string) (int, string) {
	e.t.Helper()
	return e.do(http.MethodPost, "/api/v1/sales/"+e.sale.ID+"/items/"+item+"/purchase", user, map[string]string{"Idempotency-Key": key}, nil)
}

// liveOrders waits until PostgreSQL's live orders of the sale number want (or 30 s pass) and
// returns them by user: item and per-sale slot ("-" for none).
func (e *env) liveOrders(want int) map[string][]string {
	e.t.Helper()
	var out map[string][]string
	_, err := verify.Settle(context.Background(), 30*time.Second, 50*time.Millisecond, func(ctx context.Context) ([]string, error) {
		rows, err := e.app.Orders.Pool().Query(ctx, `SELECT user_id, item_id, coalesce(sale_slot::text, '-') FROM orders
			WHERE sale_id = $1 AND status IN ('PENDING', 'PAID')`, e.sale.ID)
		if err != nil {
			return nil, err
		}
		defer rows.Close()
		out = map[string][]string{}
		n := 0
		for rows.Next() {
			var user, item, slot string
			if err := rows.Scan(&user, &item, &slot); err != nil {
				return nil, err
			}
			out[user] = append(out[user], item+"@"+slot)
			n++
		}
		if n < want {
			return []string{"waiting"}, rows.Err()
		}
		return nil, rows.Err()
	})
	if err != nil {
		e.t.Fatal(err)
	}
	return out
}

// TestPerSaleLimitAcrossItems: with "one per user per sale", a buyer who holds one item is refused
// every other item of the sale (409 ALREADY_PURCHASED, saying why, nothing reserved), PostgreSQL
// records the order in per-sale slot 0, and once the order is cancelled the buyer may buy another.
// The same through the gRPC reservation service (the split deployment).
func TestPerSaleLimitAcrossItems(t *testing.T) {
	t.Parallel()
	for _, remote := range []bool{false, true} {
		t.Run(map[bool]string{false: "in-process", true: "grpc"}[remote], func(t *testing.T) {
			t.Parallel()
			testPerSaleLimitAcrossItems(t, newPerSaleEnv(t, 5, remote))
		})
	}
}

func testPerSaleLimitAcrossItems(t *testing.T, e *env) {
	code, body := e.buyItem("hot", "ann", "k1")
	if code != http.StatusAccepted {
		t.Fatalf("first purchase: %d %s", code, body)
	}
	order := orderIDOf(t, body)
	for _, item := range []string{"cold", "wide"} {
		code, body := e.buyItem(item, "ann", "k-"+item)
		if code != http.StatusConflict || !strings.Contains(body, "ALREADY_PURCHASED") || !strings.Contains(body, "across its items") {
			t.Fatalf("%s after hot: %d %s, want 409 ALREADY_PURCHASED by the per-sale limit", item, code, body)
		}
	}
	snap, err := e.app.Stock.Snapshot(context.Background(), e.sale.ID, e.sale.Items)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range snap[1:] {
		if s.Stock != 5 || s.Holds != 0 {
			t.Fatalf("a refused item was touched: %+v", s)
		}
	}
	if got := e.liveOrders(1)["ann"]; len(got) != 1 || got[0] != "hot@0" {
		t.Fatalf("PostgreSQL has %v for ann, want [hot@0]", got)
	}
	if code, body := e.do(http.MethodDelete, "/api/v1/orders/"+order.String(), "ann", nil, nil); code != http.StatusOK {
		t.Fatalf("cancel: %d %s", code, body)
	}
	if code, body := e.buyItem("cold", "ann", "k-cold"); code != http.StatusAccepted {
		t.Fatalf("after the cancellation: %d %s, want 202", code, body)
	}
}

// TestPerSaleLimitUnderContentionEndToEnd: buyers fire at all three items at once (one of them
// split into shards); each buyer ends with exactly one order, in PostgreSQL as in the answers.
func TestPerSaleLimitUnderContentionEndToEnd(t *testing.T) {
	t.Parallel()
	e := newPerSaleEnv(t, 100, false)
	const buyers = 40
	items := []string{"hot", "cold", "wide"}
	var mu sync.Mutex
	accepted := map[string]int{}
	start := make(chan struct{})
	var wg sync.WaitGroup
	for b := range buyers {
		user := "buyer-" + strconv.Itoa(b)
		for _, item := range items {
			wg.Go(func() {
				<-start
				code, body := e.buyItem(item, user, "k-"+item)
				mu.Lock()
				defer mu.Unlock()
				switch code {
				case http.StatusAccepted:
					accepted[user]++
				case http.StatusConflict:
				default:
					t.Errorf("%s %s: %d %s", user, item, code, body)
				}
			})
		}
	}
	close(start)
	wg.Wait()
	live := e.liveOrders(buyers)
	for b := range buyers {
		user := "buyer-" + strconv.Itoa(b)
		if accepted[user] != 1 || len(live[user]) != 1 || !strings.HasSuffix(live[user][0], "@0") {
			t.Errorf("%s: %d accepted, PostgreSQL %v; want one order in per-sale slot 0", user, accepted[user], live[user])
		}
	}
}

// TestPerSaleLimitSafetyNet: when Redis loses the claims (a node lost its data), Redis lets a
// buyer reserve a second item in the same per-sale slot; PostgreSQL refuses that order
// (sale_limit), the consumer releases its unit, and the buyer keeps one live order.
func TestPerSaleLimitSafetyNet(t *testing.T) {
	t.Parallel()
	e := newPerSaleEnv(t, 5, false)
	if code, body := e.buyItem("hot", "bob", "k1"); code != http.StatusAccepted {
		t.Fatalf("first purchase: %d %s", code, body)
	}
	e.liveOrders(1)
	if err := e.app.Stock.ResetClaims(context.Background(), e.sale.ID); err != nil {
		t.Fatal(err)
	}
	if code, body := e.buyItem("cold", "bob", "k2"); code != http.StatusAccepted {
		t.Fatalf("with the claims lost Redis reserves again: %d %s", code, body)
	}
	_, err := verify.Settle(context.Background(), 30*time.Second, 50*time.Millisecond, func(ctx context.Context) ([]string, error) {
		snap, err := e.app.Stock.Snapshot(ctx, e.sale.ID, e.sale.Items)
		if err != nil {
			return nil, err
		}
		if snap[1].Stock != 5 || snap[1].Holds != 0 {
			return []string{"the refused order's unit is not back yet: " + strconv.FormatInt(snap[1].Stock, 10)}, nil
		}
		return nil, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := e.liveOrders(1)["bob"]; len(got) != 1 || got[0] != "hot@0" {
		t.Fatalf("PostgreSQL has %v for bob, want only [hot@0]", got)
	}
	cs, err := e.app.Stock.Claims(context.Background(), e.sale.ID, "bob")
	if err != nil || len(cs) != 0 {
		t.Fatalf("the refused order's claim: %+v %v, want given back with its release", cs, err)
	}
}

// TestOrphanedHoldKeepsItsPerSaleSlot: the server died between the reserve and the hand-off of a
// limited sale's order; the sweeper re-publishes the hold from Redis's record, with its per-sale
// slot, so PostgreSQL's net counts it like any other.
func TestOrphanedHoldKeepsItsPerSaleSlot(t *testing.T) {
	t.Parallel()
	e := newPerSaleEnv(t, 5, false)
	ctx := context.Background()
	rv, err := e.app.Stock.Reserve(ctx, stock.Request{SaleID: e.sale.ID, ItemID: "wide", UserID: "crashed", IdemKey: "k1",
		OrderID: uuid.Must(uuid.NewV7()), Shards: 4, SaleLimit: 1})
	if err != nil || !rv.Claimed || rv.SaleSlot != 0 {
		t.Fatalf("reserve: %+v %v", rv, err)
	}
	time.Sleep(5 * time.Millisecond) // older than the test's orphan age
	if rep, err := e.app.Lifecycle.SweepOnce(ctx); err != nil || rep.Republished != 1 {
		t.Fatalf("sweep: %+v %v, want 1 re-published", rep, err)
	}
	if got := e.liveOrders(1)["crashed"]; len(got) != 1 || got[0] != "wide@0" {
		t.Fatalf("PostgreSQL has %v for the crashed buyer, want [wide@0]", got)
	}
	if code, body := e.buyItem("hot", "crashed", "k2"); code != http.StatusConflict || !strings.Contains(body, "across its items") {
		t.Fatalf("second item: %d %s, want the per-sale limit", code, body)
	}
}
