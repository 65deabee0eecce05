package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/segmentio/kafka-go"

	"github.com/fsctl/fsctl/internal/checkout/events"
	"github.com/fsctl/fsctl/internal/checkout/stock"
	"github.com/fsctl/fsctl/internal/contract/outcome"
	"github.com/fsctl/fsctl/internal/harness/testenv/eventually"
	"github.com/fsctl/fsctl/internal/platform/kafkaconn"
	"github.com/fsctl/fsctl/loadgen"
	"github.com/fsctl/fsctl/server"
)

// TestContention is the acceptance test: 1,000 concurrent buyers for 100 units through
// the HTTP API on real Redis, Kafka and PostgreSQL.
func TestContention(t *testing.T) {
	t.Parallel()
	// The script's own answers, without the local sold-out flag (TestLocalSoldOutFlag covers it).
	testContention(t, envOptions{Quantity: 100, Limit: 1, SoldOut: server.SoldOutOff})
}

// testContention runs the contention checks (no oversell, one order per buyer, idempotent
// replays, every order in PostgreSQL) on a checkout built from o: in-process here, through the
// gRPC reservation service in TestContentionRemote.
func testContention(t *testing.T, o envOptions) *env {
	e := newEnvWith(t, o)
	res, err := burst(e.base, e.sale.ID, "buyer-", 1000, 128, nil)
	if err != nil {
		t.Fatal(err)
	}
	counts := outcomes(res)
	if got := counts[outcome.Reserved]; got != 100 {
		t.Fatalf("reserved %d, want exactly 100 (all outcomes %v)", got, counts)
	}
	if got := counts[outcome.SoldOut]; got != 900 {
		t.Fatalf("sold out %d, want 900 (all outcomes %v)", got, counts)
	}
	ids := map[string]bool{}
	for _, r := range res.Records {
		if r.Outcome == outcome.Reserved {
			ids[r.OrderID] = true
		}
	}
	if len(ids) != 100 {
		t.Fatalf("%d distinct order ids, want 100", len(ids))
	}
	if st, holds := e.redisState(); st != 0 || holds != 100 {
		t.Fatalf("redis stock %d holds %d, want 0 and 100", st, holds)
	}

	var winner, loser loadgen.Record
	for _, r := range res.Records {
		if r.Outcome == outcome.Reserved && winner.User == "" {
			winner = r
		}
		if r.Outcome == outcome.SoldOut && loser.User == "" {
			loser = r
		}
	}
	// The same buyer again with a new key: already purchased.
	if code, body := e.buy(winner.User, "another-key"); code != http.StatusConflict || !strings.Contains(body, "ALREADY_PURCHASED") {
		t.Fatalf("winner buying again: %d %s, want 409 ALREADY_PURCHASED", code, body)
	}
	// The same Idempotency-Key replayed: the first answer, for winner and loser alike.
	code, body := e.buy(winner.User, winner.Key)
	if code != http.StatusAccepted || orderIDOf(t, body).String() != winner.OrderID {
		t.Fatalf("winner replay: %d %s, want 202 with order %s", code, body, winner.OrderID)
	}
	if code, body := e.buy(loser.User, loser.Key); code != http.StatusGone || !strings.Contains(body, "SOLD_OUT") {
		t.Fatalf("loser replay: %d %s, want 410 SOLD_OUT", code, body)
	}

	c := e.counts(100)
	if c.Pending != 100 || c.Sold != 100 {
		t.Fatalf("postgres: %d pending, sold %d; want 100 and 100", c.Pending, c.Sold)
	}
	code, body = e.do(http.MethodGet, "/api/v1/orders/"+winner.OrderID, winner.User, nil, nil)
	if code != http.StatusOK || !strings.Contains(body, `"persisted":true`) || !strings.Contains(body, `"status":"PENDING"`) {
		t.Fatalf("GET winner's order: %d %s", code, body)
	}
	if st, holds := e.redisState(); st+holds != 100 {
		t.Fatalf("after drain redis stock %d + holds %d != 100", st, holds)
	}
	return e
}

// burst releases buyers (<prefix><k>) at the sale's item "hot" through the load generator, each
// with one click, directly or through journey.
func burst(base, saleID, prefix string, buyers, conns int, journey loadgen.Journey) (*loadgen.Result, error) {
	return loadgen.Run(context.Background(), loadgen.Plan{BaseURL: base, Targets: []loadgen.Target{{SaleID: saleID, ItemID: "hot"}},
		Buyers: buyers, UserPrefix: prefix, Secret: testSecret, Clicks: 1, Conns: conns, At: time.Now(), Journey: journey})
}

// outcomes counts a burst's answers by outcome.
func outcomes(res *loadgen.Result) map[outcome.Code]int {
	counts := map[outcome.Code]int{}
	if res != nil {
		for _, r := range res.Records {
			counts[r.Outcome]++
		}
	}
	return counts
}

// TestRedeliveryChangesNothing publishes every recorded order's event a second time, as Kafka
// does after a consumer crash, and checks PostgreSQL and Redis are unchanged.
func TestRedeliveryChangesNothing(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 5, 1)
	var sent []events.OrderPlaced
	for i := range 5 {
		user := "redeliver-" + strconv.Itoa(i)
		code, body := e.buy(user, "k")
		if code != http.StatusAccepted {
			t.Fatalf("buy: %d %s", code, body)
		}
		o := orderIDOf(t, body)
		sent = append(sent, events.OrderPlaced{OrderID: o, SaleID: e.sale.ID, ItemID: "hot", UserID: user,
			CreatedAt: time.Now(), ExpiresAt: time.Now().Add(time.Minute)})
	}
	before := e.counts(5)
	pub, err := events.NewPublisher(kafkaconn.Conn{Brokers: e.brokers}, e.topic)
	if err != nil {
		t.Fatal(err)
	}
	defer pub.Close()
	for _, ev := range sent {
		if err := pub.PublishOrderPlaced(context.Background(), ev); err != nil {
			t.Fatal(err)
		}
	}
	waitMetric(t, e, "fsctl_orders_duplicate_total", 5)
	after := e.counts(5)
	if after != before {
		t.Fatalf("redelivery changed postgres: before %+v after %+v", before, after)
	}
	if st, holds := e.redisState(); st != 0 || holds != 5 {
		t.Fatalf("redelivery changed redis: stock %d holds %d", st, holds)
	}
	if dead := metricValue(t, e, "fsctl_orders_dead_lettered_total"); dead != 0 {
		t.Fatalf("%v redelivered events dead-lettered, want 0", dead)
	}
}

// TestReleasedBuyerBuysAgain expires a hold the way the expiry job does (PostgreSQL first, then
// Redis) and checks the buyer can buy again without a unit leaking or being invented.
func TestReleasedBuyerBuysAgain(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 2, 1)
	code, body := e.buy("again", "k1")
	if code != http.StatusAccepted {
		t.Fatalf("buy: %d %s", code, body)
	}
	first := orderIDOf(t, body)
	e.counts(1)
	ctx := context.Background()
	if _, err := e.app.Orders.Pool().Exec(ctx, `
		WITH x AS (UPDATE orders SET status = 'EXPIRED' WHERE id = $1 AND status = 'PENDING' RETURNING sale_id, item_id)
		UPDATE sale_items s SET sold = sold - 1 FROM x WHERE s.sale_id = x.sale_id AND s.id = x.item_id`, first); err != nil {
		t.Fatal(err)
	}
	released, err := e.app.Stock.Release(ctx, stock.Release{SaleID: e.sale.ID, ItemID: "hot", OrderID: first, Status: "EXPIRED"})
	if err != nil || !released {
		t.Fatalf("release: %v %v", released, err)
	}
	if st, holds := e.redisState(); st != 2 || holds != 0 {
		t.Fatalf("after release stock %d holds %d, want 2 and 0", st, holds)
	}
	// The old key still answers with the old (now expired) order; a new key buys again.
	if code, body := e.buy("again", "k1"); code != http.StatusAccepted || orderIDOf(t, body) != first {
		t.Fatalf("replay of released order: %d %s", code, body)
	}
	code, body = e.buy("again", "k2")
	if code != http.StatusAccepted || orderIDOf(t, body) == first {
		t.Fatalf("buying again: %d %s, want 202 with a new order", code, body)
	}
	c := e.counts(1)
	if c.Pending != 1 || c.Expired != 1 || c.Sold != 1 {
		t.Fatalf("postgres %+v, want 1 pending, 1 expired, sold 1", c)
	}
	if st, holds := e.redisState(); st != 1 || holds != 1 {
		t.Fatalf("stock %d holds %d, want 1 and 1 (quantity 2 - 1 live)", st, holds)
	}
	code, body = e.do(http.MethodGet, "/api/v1/orders/"+first.String(), "again", nil, nil)
	if code != http.StatusOK || !strings.Contains(body, `"status":"EXPIRED"`) {
		t.Fatalf("GET expired order: %d %s", code, body)
	}
}

// TestDeadLetterReleasesUnit sends an event PostgreSQL must refuse (a second live order for the
// same user slot) and checks it lands on the dead-letter topic and its hold is released.
func TestDeadLetterReleasesUnit(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 3, 1)
	code, body := e.buy("dup-user", "k1")
	if code != http.StatusAccepted {
		t.Fatalf("buy: %d %s", code, body)
	}
	e.counts(1)
	// Forge a hold for the same user and slot directly in Redis, as a buggy layer above might.
	ctx := context.Background()
	k := stock.ItemKeys(e.sale.ID, "hot")
	rdb := e.app.Stock.Client()
	forged := orderIDOf(t, body)
	forged[15] ^= 0xff
	if err := rdb.HSet(ctx, k.Orders(), forged.String(), "dup-user\n0").Err(); err != nil {
		t.Fatal(err)
	}
	rdb.ZAdd(ctx, k.Holds(), redis.Z{Score: float64(time.Now().Add(time.Minute).UnixMilli()), Member: forged.String()})
	rdb.Decr(ctx, k.Stock())
	pub, err := events.NewPublisher(kafkaconn.Conn{Brokers: e.brokers}, e.topic)
	if err != nil {
		t.Fatal(err)
	}
	defer pub.Close()
	if err := pub.PublishOrderPlaced(ctx, events.OrderPlaced{OrderID: forged, SaleID: e.sale.ID, ItemID: "hot",
		UserID: "dup-user", CreatedAt: time.Now(), ExpiresAt: time.Now().Add(time.Minute)}); err != nil {
		t.Fatal(err)
	}
	waitMetric(t, e, "fsctl_orders_dead_lettered_total", 1)
	if st, holds := e.redisState(); st != 2 || holds != 1 {
		t.Fatalf("after dead letter stock %d holds %d, want 2 and 1", st, holds)
	}
	st, ok, err := e.app.Stock.LookupOrder(ctx, forged)
	if err != nil || ok {
		// No order reference was written for the forged order, so it is unknown by id; the
		// released marker is what a poll would find once the reference exists.
		t.Fatalf("lookup forged order: %+v %v %v", st, ok, err)
	}
	if c := e.counts(1); c.Pending != 1 || c.Sold != 1 {
		t.Fatalf("postgres %+v, want the refused order absent", c)
	}
	r := kafka.NewReader(kafka.ReaderConfig{Brokers: e.brokers, Topic: e.dlq, Partition: 0, MaxWait: 100 * time.Millisecond})
	defer r.Close()
	rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	m, err := r.ReadMessage(rctx)
	if err != nil {
		t.Fatalf("read dead letter: %v", err)
	}
	var dl events.DeadLetter
	if err := json.Unmarshal(m.Value, &dl); err != nil || dl.Reason != "limit" || !strings.Contains(string(dl.Value), forged.String()) {
		t.Fatalf("dead letter %s (%v), want reason limit for order %s", m.Value, err, forged)
	}
}

var metricLine = regexp.MustCompile(`(?m)^([a-z_]+)(\{[^}]*\})? ([0-9.e+-]+)$`)

// metricValue sums a metric's samples from the server's /metrics.
func metricValue(t *testing.T, e *env, name string) float64 {
	t.Helper()
	return metricAt(t, e.base, name)
}

// metricAt sums a metric's samples from the /metrics of the server at base.
func metricAt(t *testing.T, base, name string) float64 {
	t.Helper()
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return sumMetric(string(b), name)
}

// sumMetric sums a metric's samples in a /metrics page.
func sumMetric(body, name string) float64 {
	var sum float64
	for _, m := range metricLine.FindAllStringSubmatch(body, -1) {
		if m[1] == name {
			v, _ := strconv.ParseFloat(m[3], 64)
			sum += v
		}
	}
	return sum
}

func waitMetric(t *testing.T, e *env, name string, want float64) {
	t.Helper()
	eventually.OK(t, 30*time.Second, func() error {
		if got := metricValue(t, e, name); got < want {
			return fmt.Errorf("%s stayed below %v: %v", name, want, got)
		}
		return nil
	})
}
