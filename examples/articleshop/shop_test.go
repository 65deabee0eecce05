package articleshop

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"sync"
	"testing"
)

// TestConcurrentBuyersNeverOversell is the article's headline claim: 200 buyers, 50 units,
// exactly 50 orders end up in PostgreSQL.
func TestConcurrentBuyersNeverOversell(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	item := e.item(t, 50)

	var mu sync.Mutex
	counts := map[int]int{}
	var wg sync.WaitGroup
	for i := range 200 {
		wg.Go(func() {
			a := e.purchase(t, item, fmt.Sprintf("user-%d", i))
			mu.Lock()
			counts[a.status]++
			mu.Unlock()
		})
	}
	wg.Wait()
	if counts[202] != 50 || counts[410] != 150 || len(counts) != 2 {
		t.Fatalf("statuses %v, want 50×202 and 150×410", counts)
	}

	e.waitOrders(t, item, 50)
	ctx := context.Background()
	var sold, pending int
	if err := e.shop.pool.QueryRow(ctx, `SELECT sold FROM flash_sale_item WHERE id = $1`, item).Scan(&sold); err != nil {
		t.Fatal(err)
	}
	if err := e.shop.pool.QueryRow(ctx, `SELECT count(*) FROM flash_sale_order WHERE item_id = $1 AND status = 'PENDING'`, item).Scan(&pending); err != nil {
		t.Fatal(err)
	}
	stockKey, buyersKey := itemKeys(item)
	stock, _ := e.rdb.Get(ctx, stockKey).Result()
	buyers, _ := e.rdb.SCard(ctx, buyersKey).Result()
	if sold != 50 || pending != 50 || stock != "0" || buyers != 50 {
		t.Fatalf("sold=%d pending=%d stock=%q buyers=%d, want 50/50/0/50", sold, pending, stock, buyers)
	}
}

// TestClientMistakes covers every 4xx answer of the purchase and item endpoints.
func TestClientMistakes(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	item := e.item(t, 5)
	path := "/api/flash-sales/items/" + strconv.FormatInt(item, 10) + "/purchase"

	if a := e.purchase(t, item, "alice"); a.status != 202 || a.body["status"] != "PENDING" || a.body["orderId"] == "" {
		t.Fatalf("first purchase: %d %v", a.status, a.body)
	}
	cases := []struct {
		name, method, path, bearer, body string
		status                           int
		code                             string
	}{
		{"same user twice", "POST", path, token(t, "alice"), "", 409, "ALREADY_PURCHASED"},
		{"no token", "POST", path, "", "", 401, "UNAUTHORIZED"},
		{"bad token", "POST", path, "not.a.jwt", "", 401, "UNAUTHORIZED"},
		{"token without userId", "POST", path, token(t, ""), "", 401, "UNAUTHORIZED"},
		{"quantity 2", "POST", path, token(t, "bob"), `{"quantity":2}`, 400, "INVALID_QUANTITY"},
		{"malformed json", "POST", path, token(t, "bob"), `{"quantity":`, 400, "BAD_REQUEST"},
		{"unknown item", "POST", "/api/flash-sales/items/" + strconv.FormatInt(randomItemID(t), 10) + "/purchase", token(t, "bob"), "", 404, "ITEM_NOT_FOUND"},
		{"non-numeric item", "POST", "/api/flash-sales/items/abc/purchase", token(t, "bob"), "", 400, "BAD_REQUEST"},
		{"negative item", "POST", "/api/flash-sales/items/-3/purchase", token(t, "bob"), "", 400, "BAD_REQUEST"},
		{"view unknown item", "GET", "/api/flash-sales/items/" + strconv.FormatInt(randomItemID(t), 10), "", "", 404, "ITEM_NOT_FOUND"},
		{"pay non-uuid order", "POST", "/api/flash-sales/orders/xyz/pay", token(t, "bob"), "", 400, "BAD_REQUEST"},
	}
	for _, c := range cases {
		a := e.do(t, c.method, c.path, c.bearer, c.body)
		if a.status != c.status || a.body["code"] != c.code || a.body["message"] == "" {
			t.Errorf("%s: got %d %v, want %d %s", c.name, a.status, a.body, c.status, c.code)
		}
	}
	if a := e.do(t, "POST", path, token(t, "carol"), `{"quantity":1}`); a.status != 202 {
		t.Errorf("explicit quantity 1: %d %v", a.status, a.body)
	}
	a := e.do(t, "GET", "/api/flash-sales/items/"+strconv.FormatInt(item, 10), "", "")
	if a.status != 200 || a.body["quantity"] != 5.0 || a.body["stock"] != 3.0 || a.body["name"] != "test item" {
		t.Errorf("view item: %d %v", a.status, a.body)
	}
	if a := e.do(t, "GET", "/actuator/health", "", ""); a.status != 200 || a.body["status"] != "UP" {
		t.Errorf("health: %d %v", a.status, a.body)
	}
}

// TestPayOnlyOwnPendingOrder: the owner pays once; anyone else sees 404; paying twice is 409.
func TestPayOnlyOwnPendingOrder(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	item := e.item(t, 2)
	bought := e.purchase(t, item, "owner")
	order, _ := bought.body["orderId"].(string)
	if bought.status != 202 || order == "" {
		t.Fatalf("purchase: %d %v", bought.status, bought.body)
	}
	e.waitOrders(t, item, 1)
	path := "/api/flash-sales/orders/" + order + "/pay"

	if a := e.do(t, "POST", path, token(t, "intruder"), ""); a.status != 404 {
		t.Errorf("other user: %d %v, want 404", a.status, a.body)
	}
	if a := e.do(t, "POST", path, token(t, "owner"), ""); a.status != 200 || a.body["status"] != "PAID" || a.body["orderId"] != order {
		t.Errorf("owner: %d %v, want 200 PAID", a.status, a.body)
	}
	if a := e.do(t, "POST", path, token(t, "owner"), ""); a.status != 409 {
		t.Errorf("pay twice: %d %v, want 409", a.status, a.body)
	}
	if a := e.do(t, "POST", path, "", ""); a.status != 401 {
		t.Errorf("no token: %d %v, want 401", a.status, a.body)
	}
}

// TestPreheatRebuildsFromPostgres: after Redis loses the item, Preheat restores stock and buyers
// from the orders PostgreSQL holds, so old buyers are still refused.
func TestPreheatRebuildsFromPostgres(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	item := e.item(t, 5)
	for _, u := range []string{"u1", "u2", "u3"} {
		if a := e.purchase(t, item, u); a.status != 202 {
			t.Fatalf("purchase %s: %d %v", u, a.status, a.body)
		}
	}
	e.waitOrders(t, item, 3)
	ctx := context.Background()
	stockKey, buyersKey := itemKeys(item)
	e.rdb.Del(ctx, stockKey, buyersKey)
	if a := e.purchase(t, item, "u4"); a.status != 404 {
		t.Fatalf("before preheat: %d %v, want 404", a.status, a.body)
	}
	if err := e.shop.Preheat(ctx, item); err != nil {
		t.Fatal(err)
	}
	stock, _ := e.rdb.Get(ctx, stockKey).Result()
	buyers, _ := e.rdb.SMembers(ctx, buyersKey).Result()
	sort.Strings(buyers)
	if stock != "2" || fmt.Sprint(buyers) != "[u1 u2 u3]" {
		t.Fatalf("after preheat stock=%q buyers=%v, want 2 [u1 u2 u3]", stock, buyers)
	}
	if a := e.purchase(t, item, "u1"); a.status != 409 {
		t.Errorf("old buyer after preheat: %d %v, want 409", a.status, a.body)
	}
	if err := e.shop.Preheat(ctx, randomItemID(t)); err != ErrItemNotFound {
		t.Errorf("preheat unknown item: %v, want ErrItemNotFound", err)
	}
}

// TestPublishFailureCompensates: when Kafka refuses the order the reservation is undone, so the
// unit is not lost and the buyer may try again.
func TestPublishFailureCompensates(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	item := e.item(t, 3)
	if err := e.shop.writer.Close(); err != nil { // a closed writer fails every publish at once
		t.Fatal(err)
	}
	a := e.purchase(t, item, "unlucky")
	if a.status != 503 || a.body["code"] != "SERVICE_UNAVAILABLE" {
		t.Fatalf("purchase: %d %v, want 503 SERVICE_UNAVAILABLE", a.status, a.body)
	}
	ctx := context.Background()
	stockKey, buyersKey := itemKeys(item)
	stock, _ := e.rdb.Get(ctx, stockKey).Result()
	member, _ := e.rdb.SIsMember(ctx, buyersKey, "unlucky").Result()
	if stock != "3" || member {
		t.Fatalf("after failed publish stock=%q buyer=%v, want 3 false", stock, member)
	}
}
