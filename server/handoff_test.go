package server_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/fsctl/fsctl/internal/checkout/auth"
	"github.com/fsctl/fsctl/internal/checkout/events"
	"github.com/fsctl/fsctl/internal/checkout/stock"
	"github.com/fsctl/fsctl/internal/contract/outcome"
	"github.com/fsctl/fsctl/internal/contract/sale"
	"github.com/fsctl/fsctl/internal/harness/testenv"
	"github.com/fsctl/fsctl/internal/platform/kafkaconn"
	"github.com/fsctl/fsctl/internal/proof/verify"
	"github.com/fsctl/fsctl/reconcile"
	"github.com/fsctl/fsctl/server"
	checkouttest "github.com/fsctl/fsctl/server/servertest"
)

// switchPublisher stands in for the Kafka hand-off so a test can make it fail on demand; the
// stock and order stores stay real.
type switchPublisher struct {
	fail      atomic.Bool
	published atomic.Int64
}

func (p *switchPublisher) PublishOrderPlaced(context.Context, events.OrderPlaced) error {
	if p.fail.Load() {
		return errors.New("broker unreachable")
	}
	p.published.Add(1)
	return nil
}

// TestFailedHandOffIsNeverAFalseYes checks that when the order cannot be handed to Kafka the buyer
// gets 503, the unit goes back to stock, and a retry with the same key is a fresh attempt; and
// that an order in flight (not yet in PostgreSQL) reads as PENDING with persisted:false.
func TestFailedHandOffIsNeverAFalseYes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, db, sl := stores(t, sale.Sale{ID: testenv.ID(t, "handoff"), OpensAt: time.Now().Add(-time.Minute), Items: []sale.Item{{ID: "hot", Quantity: 1}}})
	verifier, _ := auth.NewVerifier(testSecret, nil)
	pub := &switchPublisher{}
	srv := server.New(server.DefaultConfig(), server.Deps{Auth: verifier, Stock: st, Publisher: pub, Orders: db})
	ts := httptest.NewServer(srv.Handler())
	defer ts.Close()
	tok, _ := auth.Mint(testSecret, "buyer", time.Now(), time.Hour)
	call := func(method, path, key string) (int, string) { return callAs(t, ts, method, path, tok, key) }
	remaining := func() int64 {
		s, err := st.Snapshot(ctx, sl.ID, sl.Items)
		if err != nil {
			t.Fatal(err)
		}
		return s[0].Stock
	}
	purchase := "/api/v1/sales/" + sl.ID + "/items/hot/purchase"

	pub.fail.Store(true)
	code, body := call("POST", purchase, "k1")
	if code != http.StatusServiceUnavailable || !strings.Contains(body, "ORDER_PIPELINE_UNAVAILABLE") {
		t.Fatalf("purchase with Kafka down: %d %s, want 503 ORDER_PIPELINE_UNAVAILABLE", code, body)
	}
	if n := remaining(); n != 1 {
		t.Fatalf("stock %d after failed hand-off, want the unit back (1)", n)
	}
	// Still down: the same key must not replay a "reserved" that never happened.
	if code, _ := call("POST", purchase, "k1"); code != http.StatusServiceUnavailable {
		t.Fatalf("retry while Kafka down: %d, want 503", code)
	}

	pub.fail.Store(false)
	code, body = call("POST", purchase, "k1")
	if code != http.StatusAccepted {
		t.Fatalf("retry with the same key after recovery: %d %s, want 202", code, body)
	}
	if pub.published.Load() != 1 || remaining() != 0 {
		t.Fatalf("published %d, stock %d; want 1 and 0", pub.published.Load(), remaining())
	}
	id := orderIDOf(t, body)
	code, body = call("GET", "/api/v1/orders/"+id.String(), "")
	if code != http.StatusOK || !strings.Contains(body, `"status":"PENDING"`) || !strings.Contains(body, `"persisted":false`) {
		t.Fatalf("GET in-flight order: %d %s, want PENDING persisted:false", code, body)
	}
	other, _ := auth.Mint(testSecret, "someone-else", time.Now(), time.Hour)
	req, _ := http.NewRequest("GET", ts.URL+"/api/v1/orders/"+id.String(), nil)
	req.Header.Set("Authorization", "Bearer "+other)
	resp, err := ts.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Fatalf("another user's in-flight order: %d, want 404", resp.StatusCode)
	}
}

// TestReplayedYesIsAsDurableAsAFreshOne closes the hole of a replay answered from Redis alone: the
// first request reserves and its instance dies before the hand-off, the buyer retries the same key
// and hears 202, and then Redis loses its data before any sweeper re-published the hold. The order
// must still reach PostgreSQL, because the replay handed it to Kafka again before saying yes.
// Without that, nothing but Redis ever knew the order (the checkout runs no sweeper here).
func TestReplayedYesIsAsDurableAsAFreshOne(t *testing.T) {
	t.Parallel()
	c := checkouttest.Start(t, checkouttest.Options{Quantity: 5})
	ctx := context.Background()
	first, err := c.App.Stock.Reserve(ctx, stock.Request{SaleID: c.Sale.ID, ItemID: "hot", UserID: "buyer", IdemKey: "k",
		OrderID: uuid.Must(uuid.NewV7()), Shards: 1})
	if err != nil || first.Outcome != outcome.Reserved {
		t.Fatalf("the first attempt's reserve: %+v %v", first, err)
	}
	// ...and its instance dies here: no OrderPlaced. The buyer's retry lands on a live instance.
	code, body := c.Buy("buyer", "hot", "k")
	if code != http.StatusAccepted || orderIDOf(t, body) != first.OrderID {
		t.Fatalf("the retry: %d %s, want 202 for order %s", code, body, first.OrderID)
	}
	if err := c.App.Stock.Reset(ctx, c.Sale); err != nil { // Redis loses everything
		t.Fatal(err)
	}
	waiting, err := verify.Settle(ctx, 30*time.Second, 100*time.Millisecond, func(ctx context.Context) ([]string, error) {
		if _, err := c.App.Orders.GetOrder(ctx, first.OrderID); err != nil {
			return []string{fmt.Sprintf("order %s: %v", first.OrderID, err)}, nil
		}
		return nil, nil
	})
	if err != nil || len(waiting) > 0 {
		t.Fatalf("a 202 the buyer heard on a replay was lost with Redis: %v %v", waiting, err)
	}
}

// TestReplayWhoseHandOffFailsKeepsTheHold: when the replay cannot reach Kafka the buyer is told to
// retry with the same key, and the hold stays (the first attempt may have handed the order off,
// so releasing it could free a unit PostgreSQL counts sold); once Kafka is back the replay is 202.
func TestReplayWhoseHandOffFailsKeepsTheHold(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, db, sl := stores(t, sale.Sale{ID: testenv.ID(t, "replay"), OpensAt: time.Now().Add(-time.Minute), Items: []sale.Item{{ID: "hot", Quantity: 1}}})
	verifier, _ := auth.NewVerifier(testSecret, nil)
	pub := &switchPublisher{}
	srv := server.New(server.DefaultConfig(), server.Deps{Auth: verifier, Stock: st, Publisher: pub, Orders: db})
	ts := httptest.NewServer(srv.Handler())
	defer ts.Close()
	first, err := st.Reserve(ctx, stock.Request{SaleID: sl.ID, ItemID: "hot", UserID: "buyer", IdemKey: "k", OrderID: uuid.Must(uuid.NewV7()), Shards: 1})
	if err != nil || first.Outcome != outcome.Reserved {
		t.Fatalf("the first attempt's reserve: %+v %v", first, err)
	}
	tok, _ := auth.Mint(testSecret, "buyer", time.Now(), time.Hour)
	replay := func() (int, string) { return purchaseOf(t, ts, sl.ID, tok, "k") }
	pub.fail.Store(true)
	if code, body := replay(); code != http.StatusServiceUnavailable || !strings.Contains(body, "ORDER_PIPELINE_UNAVAILABLE") {
		t.Fatalf("a replay with Kafka down: %d %s, want 503 ORDER_PIPELINE_UNAVAILABLE", code, body)
	}
	if s, err := st.Snapshot(ctx, sl.ID, sl.Items); err != nil || s[0].Stock != 0 || s[0].Holds != 1 {
		t.Fatalf("after the replay's failed hand-off: %+v %v, want the hold kept (stock 0, 1 hold)", s, err)
	}
	pub.fail.Store(false)
	if code, body := replay(); code != http.StatusAccepted || orderIDOf(t, body) != first.OrderID || pub.published.Load() != 1 {
		t.Fatalf("the replay with Kafka back: %d %s, published %d; want 202 for %s, published once", code, body, pub.published.Load(), first.OrderID)
	}
}

// TestSaleMissingInRedisIsARetryNotANotFound: a sale PostgreSQL has but Redis lost (wiped, being
// rebuilt) answers 503 UNAVAILABLE, never 404 as if the sale did not exist; rebuilt, it sells.
func TestSaleMissingInRedisIsARetryNotANotFound(t *testing.T) {
	t.Parallel()
	c := checkouttest.Start(t, checkouttest.Options{Quantity: 2})
	ctx := context.Background()
	if err := c.App.Stock.Reset(ctx, c.Sale); err != nil {
		t.Fatal(err)
	}
	code, body := c.Buy("buyer", "hot", "k")
	if code != http.StatusServiceUnavailable || !strings.Contains(body, `"UNAVAILABLE"`) || !strings.Contains(body, "retry") {
		t.Fatalf("a purchase while Redis has lost the sale: %d %s, want 503 UNAVAILABLE and a retry", code, body)
	}
	rep, err := reconcile.Run(ctx, reconcile.Config{SaleID: c.Sale.ID, RedisURL: c.RedisURL, PostgresURL: c.PostgresURL,
		Kafka: kafkaconn.Conn{Brokers: c.Brokers}, OrdersTopic: c.OrdersTopic, DeadLetterTopic: c.DeadLetterTopic, ConsumerGroup: c.ConsumerGroup, RebuildRedis: true})
	if err != nil || !rep.OK() {
		t.Fatalf("rebuild: %v %+v", err, rep)
	}
	if code, body := c.Buy("buyer", "hot", "k"); code != http.StatusAccepted {
		t.Fatalf("the retry after the rebuild: %d %s, want 202", code, body)
	}
}

// rebuildingPublisher stands in for a hand-off that is still on its way to Kafka while Redis is
// rebuilt: before it "lands" it runs rebuild (the rebuild's Redis side: the wipe, a new epoch, the
// reload).
type rebuildingPublisher struct {
	rebuild func()
	once    atomic.Bool
}

func (p *rebuildingPublisher) PublishOrderPlaced(context.Context, events.OrderPlaced) error {
	if p.once.CompareAndSwap(false, true) {
		p.rebuild()
	}
	return nil
}

// TestHandOffOutlivedByARebuildIsNotAYes: a reservation whose hand-off reaches Kafka only after a
// rebuild replaced the Redis state it was made on is answered 503, not RESERVED: the rebuild's
// snapshot may not hold it, and PostgreSQL drops it as stale (its epoch is older). The retry with
// the same key reserves afresh on the rebuilt state, under the new epoch.
func TestHandOffOutlivedByARebuildIsNotAYes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, db, sl := stores(t, sale.Sale{ID: testenv.ID(t, "fence"), OpensAt: time.Now().Add(-time.Minute), Items: []sale.Item{{ID: "hot", Quantity: 3}}})
	pub := &rebuildingPublisher{rebuild: func() {
		if err := st.Wipe(ctx, sl); err != nil {
			t.Error(err)
			return
		}
		epochs, err := db.NextEpochs(ctx, sl.ID)
		if err != nil {
			t.Error(err)
			return
		}
		rebuilt := sl
		rebuilt.Items = []sale.Item{sl.Items[0]}
		rebuilt.Items[0].Epoch = epochs["hot"]
		if err := st.Reload(ctx, rebuilt, map[string]int64{"hot": 3}); err != nil {
			t.Error(err)
		}
	}}
	verifier, _ := auth.NewVerifier(testSecret, nil)
	srv := server.New(server.DefaultConfig(), server.Deps{Auth: verifier, Stock: st, Publisher: pub, Orders: db})
	ts := httptest.NewServer(srv.Handler())
	defer ts.Close()
	tok, _ := auth.Mint(testSecret, "buyer", time.Now(), time.Hour)
	buy := func() (int, string) { return purchaseOf(t, ts, sl.ID, tok, "k") }
	if code, body := buy(); code != http.StatusServiceUnavailable || !strings.Contains(body, "being restored") {
		t.Fatalf("a hand-off that landed after the rebuild: %d %s, want 503 (not a yes)", code, body)
	}
	code, body := buy()
	if code != http.StatusAccepted {
		t.Fatalf("the retry with the same key on the rebuilt state: %d %s, want 202", code, body)
	}
	id := orderIDOf(t, body)
	state, _, err := st.LookupOrder(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := st.Confirm(ctx, sl.ID, "hot", state.Shard, 1, id, 1); err != nil || !ok {
		t.Fatalf("the retry's order is not live on the rebuilt state (epoch 1): %v %v", ok, err)
	}
}

// purchaseOf buys item "hot" of the sale on ts as the token's buyer, with key.
func purchaseOf(t *testing.T, ts *httptest.Server, saleID, tok, key string) (int, string) {
	t.Helper()
	return callAs(t, ts, http.MethodPost, "/api/v1/sales/"+saleID+"/items/hot/purchase", tok, key)
}

// callAs sends method path to ts as the token's buyer, with an Idempotency-Key when key is set.
func callAs(t *testing.T, ts *httptest.Server, method, path, tok, key string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(method, ts.URL+path, nil)
	req.Header.Set("Authorization", "Bearer "+tok)
	if key != "" {
		req.Header.Set("Idempotency-Key", key)
	}
	resp, err := ts.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// hangingPublisher holds the first hand-off until the test lets it fail; every other one succeeds.
type hangingPublisher struct {
	first   atomic.Bool
	hanging chan struct{} // closed once the first hand-off hangs
	fail    chan struct{} // closed to make it fail
}

func (p *hangingPublisher) PublishOrderPlaced(ctx context.Context, _ events.OrderPlaced) error {
	if p.first.CompareAndSwap(false, true) {
		close(p.hanging)
		<-p.fail
		return errors.New("broker timed out")
	}
	return nil
}

// TestAFailedHandOffDoesNotTakeBackAConfirmedYes: the buyer's first attempt reserves and its
// hand-off hangs; the retry with the same key replays the reservation, hands it off again and is
// told RESERVED. When the first hand-off then fails, its release must leave the order alone: that
// buyer was told the unit is theirs (chaos seed 13 lost 20 such orders: the release took the unit
// back and the consumer dropped the order as stale). The first attempt is told to retry, and a
// retry replays the same order.
func TestAFailedHandOffDoesNotTakeBackAConfirmedYes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, db, sl := stores(t, sale.Sale{ID: testenv.ID(t, "race"), OpensAt: time.Now().Add(-time.Minute), Items: []sale.Item{{ID: "hot", Quantity: 2}}})
	pub := &hangingPublisher{hanging: make(chan struct{}), fail: make(chan struct{})}
	verifier, _ := auth.NewVerifier(testSecret, nil)
	srv := server.New(server.DefaultConfig(), server.Deps{Auth: verifier, Stock: st, Publisher: pub, Orders: db})
	ts := httptest.NewServer(srv.Handler())
	defer ts.Close()
	tok, _ := auth.Mint(testSecret, "buyer", time.Now(), time.Hour)
	type answer struct {
		code int
		body string
	}
	first := make(chan answer, 1)
	go func() {
		code, body := purchaseOf(t, ts, sl.ID, tok, "k")
		first <- answer{code, body}
	}()
	<-pub.hanging
	code, body := purchaseOf(t, ts, sl.ID, tok, "k")
	if code != http.StatusAccepted {
		t.Fatalf("the retry while the first hand-off hangs: %d %s, want 202 (a replay handed off again)", code, body)
	}
	yes := orderIDOf(t, body)
	close(pub.fail)
	if a := <-first; a.code != http.StatusServiceUnavailable {
		t.Fatalf("the first attempt, its hand-off failed: %d %s, want 503", a.code, a.body)
	}
	snap, err := st.Snapshot(ctx, sl.ID, sl.Items)
	if err != nil {
		t.Fatal(err)
	}
	if snap[0].Stock != 1 || snap[0].Holds != 1 {
		t.Fatalf("after the failed first hand-off: stock %d, holds %d; want the confirmed order kept (1 and 1)", snap[0].Stock, snap[0].Holds)
	}
	if code, body := purchaseOf(t, ts, sl.ID, tok, "k"); code != http.StatusAccepted || orderIDOf(t, body) != yes {
		t.Fatalf("a third attempt: %d %s, want 202 for the same order %s", code, body, yes)
	}
}

// TestAReplayOfAnEndedOrderIsItsFirstAnswer: a key replayed after its order expired (or was
// cancelled) hears the RESERVED it was given, for that order: an order ends in PostgreSQL first, so
// it was recorded, and the confirm must not turn the replay into an endless "retry".
func TestAReplayOfAnEndedOrderIsItsFirstAnswer(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, db, sl := stores(t, sale.Sale{ID: testenv.ID(t, "ended"), OpensAt: time.Now().Add(-time.Minute), Items: []sale.Item{{ID: "hot", Quantity: 2}}})
	verifier, _ := auth.NewVerifier(testSecret, nil)
	srv := server.New(server.DefaultConfig(), server.Deps{Auth: verifier, Stock: st, Publisher: &switchPublisher{}, Orders: db})
	ts := httptest.NewServer(srv.Handler())
	defer ts.Close()
	tok, _ := auth.Mint(testSecret, "buyer", time.Now(), time.Hour)
	code, body := purchaseOf(t, ts, sl.ID, tok, "k")
	if code != http.StatusAccepted {
		t.Fatalf("purchase: %d %s", code, body)
	}
	id := orderIDOf(t, body)
	if ok, err := st.Release(ctx, stock.Release{SaleID: sl.ID, ItemID: "hot", Shards: 1, OrderID: id, Status: "EXPIRED"}); err != nil || !ok {
		t.Fatalf("expire the order: %v %v", ok, err)
	}
	if code, body := purchaseOf(t, ts, sl.ID, tok, "k"); code != http.StatusAccepted || orderIDOf(t, body) != id {
		t.Fatalf("a replay after the order expired: %d %s, want 202 for order %s", code, body, id)
	}
}
