package warroom

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/fsctl/fsctl/examples/articleshop/articletest"
	"github.com/fsctl/fsctl/internal/checkout/stock"
	"github.com/fsctl/fsctl/internal/harness/stack"
	"github.com/fsctl/fsctl/internal/harness/testenv"
	"github.com/fsctl/fsctl/internal/harness/testenv/eventually"
	"github.com/fsctl/fsctl/internal/platform/kafkaconn"
	"github.com/fsctl/fsctl/internal/target/profile"
	"github.com/fsctl/fsctl/lua"
	checkouttest "github.com/fsctl/fsctl/server/servertest"
)

// genericProfile is the bundled server's profile with deep off, so the war room reads the bundled
// checkout only through what the profile declares (what any other checkout offers, without the
// bundled server's own records), with the test checkout's order log; keep says whether
// http.metrics and http.admin stay declared.
func genericProfile(c *checkouttest.Checkout, keep bool) *profile.Profile {
	p := *profile.Default()
	p.Deep = ""
	p.Kafka = profile.Kafka{Topic: c.OrdersTopic, DeadLetter: c.DeadLetterTopic, Group: c.ConsumerGroup}
	if !keep {
		p.HTTP.Metrics, p.HTTP.Admin = "", ""
	}
	return &p
}

func openProfileSources(t *testing.T, c *checkouttest.Checkout, p *profile.Profile) Sources {
	t.Helper()
	src, closeFn, err := Open(Endpoints{Sale: c.Sale.ID, RedisURL: stack.EndpointsFromEnv().RedisURL, PostgresURL: c.PostgresURL,
		Kafka: kafkaconn.Conn{Brokers: c.Brokers}, Servers: []string{c.Base}, AdminToken: checkouttest.AdminToken, Profile: p})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(closeFn)
	return src
}

// settledProfile collects until the orders read through the profile count live units.
func settledProfile(t *testing.T, src Sources, live int64) Snapshot {
	t.Helper()
	var s Snapshot
	eventually.OK(t, 30*time.Second, func() error {
		s = Once(context.Background(), src, DefaultAlerts(), 0, CollectOptions{})
		// The counts come from separate queries: the one by status may run before the consumer's
		// commit and the others after it, so wait until all of them have seen it.
		if o := s.Orders; o.OK() && len(o.Data) == 1 && o.Data[0].Live == live && o.Data[0].Sold == live &&
			(o.Data[0].LiveOnly || o.Data[0].Pending+o.Data[0].Paid == live) {
			return nil
		}
		return fmt.Errorf("orders did not reach %d live: %+v", live, s.Orders)
	})
	return s
}

func TestNonDeepProfileReadsTheCheckoutThroughItsDeclarations(t *testing.T) {
	c := checkouttest.Start(t, checkouttest.Options{Quantity: 5, Limit: 1})
	for _, u := range []string{"ann", "ben", "cat"} {
		if code, body := c.Buy(u, "hot", "k-"+u); code != http.StatusAccepted {
			t.Fatalf("purchase: %d %s", code, body)
		}
	}
	src := openProfileSources(t, c, genericProfile(c, false))
	s := settledProfile(t, src, 3)

	state, count := checkoutState(t, c)
	if !s.Items.OK() || len(s.Items.Data) != 1 {
		t.Fatalf("items %+v", s.Items)
	}
	it, o := s.Items.Data[0], s.Orders.Data[0]
	if it.ID != "hot" || it.Quantity != 5 || it.Remaining != state.Stock || it.Held != state.Holds || it.Buyers != state.Buyers {
		t.Errorf("items %+v, redis %+v", it, state)
	}
	if it.Remaining != 2 || it.Held != 3 || it.Buyers != 3 {
		t.Errorf("after 3 reservations of 5: %+v", it)
	}
	if o.Quantity != count.Quantity || o.Sold != count.Sold || o.Live != count.Pending+count.Paid || o.Paid != count.Paid || !o.LiveOnly {
		t.Errorf("orders %+v, postgres %+v", o, count)
	}
	if d := s.Derived.Items[0]; !d.Consistent || d.Drift != 0 || d.Unpaid != 3 || s.Derived.OrdersByStatus["LIVE"] != 3 {
		t.Errorf("derived %+v %+v", d, s.Derived.OrdersByStatus)
	}
	if !s.Pipeline.OK() || len(s.Pipeline.Data.Partitions) != 3 || s.Pipeline.Data.Topic != c.OrdersTopic {
		t.Errorf("kafka is declared, its lag must be read: %+v", s.Pipeline)
	}
	for name, st := range map[string]Status{"traffic": s.Traffic.Status, "admission": s.Admission.Status, "payment": s.Payment.Status} {
		if st.State != NotAvailable || !strings.Contains(st.Reason, "no metrics endpoint") || st.Error != "" {
			t.Errorf("%s: %+v, want not available: no metrics endpoint", name, st)
		}
	}
	if s.Control.State != NotAvailable || !strings.Contains(s.Control.Reason, "no admin API") {
		t.Errorf("control: %+v", s.Control.Status)
	}
	if s.Profile != "fsctl" {
		t.Errorf("snapshot names profile %q", s.Profile)
	}
	var b bytes.Buffer
	if err := WriteTable(&b, &s); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"profile fsctl", "not available: the profile declares no metrics endpoint", "ORDERS     LIVE=3 PAID=0"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, b.String())
		}
	}
}

// TestBundledProfileAddsWhatOnlyFsctlServeKeeps: through its own (deep) profile the bundled
// checkout's orders are counted by status, and units a transfer between shards took out of one
// shard count as left until the other applies them; the same profile without deep reads only the
// declared keys and queries.
func TestBundledProfileAddsWhatOnlyFsctlServeKeeps(t *testing.T) {
	c := checkouttest.Start(t, checkouttest.Options{Quantity: 8, Limit: 1, Shards: 4}) // 2 units per shard
	if code, body := c.Buy("ann", "hot", "k-ann"); code != http.StatusAccepted {
		t.Fatalf("purchase: %d %s", code, body)
	}
	from := stock.ShardKeys(c.Sale.ID, "hot", 2, 4)
	cut := redis.NewScript(lua.TransferOut) // a transfer to shard 3 that a crash cut short
	if res, err := cut.Run(context.Background(), testenv.Redis(t), []string{from.Stock(), from.Ledger(), from.TransferSeq()}, 1, 3, 2).StringSlice(); err != nil || res[0] != "1" {
		t.Fatalf("transfer_out = %v, %v", res, err)
	}

	bundled := settledProfile(t, openProfileSources(t, c, nil), 1)
	it, o, d := bundled.Items.Data[0], bundled.Orders.Data[0], bundled.Derived.Items[0]
	if it.Remaining != 7 || it.Held != 1 || it.Shards != 4 || d.Drift != 0 || !d.Consistent || d.InFlight != 0 {
		t.Errorf("bundled: items %+v derived %+v, want 7 left with the unit in transit, drift 0", it, d)
	}
	if o.LiveOnly || o.Pending != 1 || o.Paid != 0 || o.Live != 1 || bundled.Derived.OrdersByStatus["PENDING"] != 1 {
		t.Errorf("bundled: orders %+v by status %v, want them counted by status", o, bundled.Derived.OrdersByStatus)
	}
	var b bytes.Buffer
	if err := WriteTable(&b, &bundled); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "ORDERS     PENDING=1 PAID=0 EXPIRED=0 CANCELLED=0 FAILED=0") {
		t.Errorf("table lacks the orders by status:\n%s", b.String())
	}

	declared := settledProfile(t, openProfileSources(t, c, genericProfile(c, false)), 1)
	if it, d := declared.Items.Data[0], declared.Derived.Items[0]; it.Remaining != 6 || d.Drift != -1 || !declared.Orders.Data[0].LiveOnly {
		t.Errorf("without deep: items %+v derived %+v, want the counters' 6 left and drift -1", it, d)
	}
}

func TestNonDeepProfileUsesTheMetricsAndAdminItDeclares(t *testing.T) {
	c := checkouttest.Start(t, checkouttest.Options{Quantity: 5, Limit: 1})
	if code, body := c.Buy("ann", "hot", "k-ann"); code != http.StatusAccepted {
		t.Fatalf("purchase: %d %s", code, body)
	}
	s := Collect(context.Background(), openProfileSources(t, c, genericProfile(c, true)), CollectOptions{})
	if !s.Traffic.OK() || s.Traffic.Data.Outcomes["RESERVED"] != 1 {
		t.Errorf("traffic through http.metrics: %+v", s.Traffic)
	}
	if !s.Control.OK() || len(s.Control.Data.Switches) != 4 {
		t.Errorf("control through http.admin: %+v", s.Control)
	}
}

func TestBrokenProfileQueryShowsOrdersDownWithTheQuery(t *testing.T) {
	c := checkouttest.Start(t, checkouttest.Options{Quantity: 5, Limit: 1})
	p := genericProfile(c, false)
	p.SQL.Live = "SELECT count(*) FROM no_such_orders WHERE item_id = @item"
	s := Once(context.Background(), openProfileSources(t, c, p), DefaultAlerts(), 0, CollectOptions{})
	if s.Orders.State != Down || !strings.Contains(s.Orders.Error, "sql.live") || !strings.Contains(s.Orders.Error, `relation "no_such_orders" does not exist`) {
		t.Fatalf("orders: %+v, want down naming sql.live with the database's error", s.Orders.Status)
	}
	if !s.Items.OK() || s.Items.Data[0].Remaining != 5 || !s.Pipeline.OK() {
		t.Errorf("the rest of the snapshot must complete: items %+v pipeline %+v", s.Items, s.Pipeline.Status)
	}
	if s.Derived.Items[0].Consistent {
		t.Errorf("drift cannot be known without the orders: %+v", s.Derived.Items[0])
	}
}

// buyAll sends one purchase per buyer concurrently and counts the answers by status.
func buyAll(shop *articletest.Shop, item string, buyers int) map[int]int {
	var mu sync.Mutex
	got := map[int]int{}
	var wg sync.WaitGroup
	for i := range buyers {
		wg.Go(func() {
			code, _ := shop.Buy(fmt.Sprintf("buyer-%d", i), item)
			mu.Lock()
			got[code]++
			mu.Unlock()
		})
	}
	wg.Wait()
	return got
}

func TestArticleShopThroughItsShippedProfile(t *testing.T) {
	shop := articletest.Start(t, 20)
	item := shop.Items[0]
	if got := buyAll(shop, item, 30); got[http.StatusAccepted] != 20 || got[http.StatusGone] != 10 {
		t.Fatalf("answers %v, want 20 accepted and 10 sold out", got)
	}
	shop.WaitOrders(item, 20)
	src, closeFn, err := Open(Endpoints{Sale: shop.Sale, RedisURL: shop.RedisURL, PostgresURL: shop.PostgresURL, Kafka: kafkaconn.Conn{Brokers: shop.Brokers},
		Servers: []string{shop.Base}, Profile: shop.Profile})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(closeFn)
	s := Once(context.Background(), src, DefaultAlerts(), 0, CollectOptions{})
	if !s.Items.OK() || !s.Orders.OK() {
		t.Fatalf("items %+v orders %+v", s.Items.Status, s.Orders.Status)
	}
	var it *ItemStock
	for i := range s.Items.Data {
		if s.Items.Data[i].ID == item {
			it = &s.Items.Data[i]
		}
	}
	if it == nil || it.Quantity != 20 || it.Remaining != 0 || it.Held != 0 || it.Buyers != 20 {
		t.Fatalf("item %s: %+v", item, s.Items.Data)
	}
	for i, o := range s.Orders.Data {
		if o.ID == item && (o.Quantity != 20 || o.Live != 20 || o.Sold != 20 || o.Paid != 0 || s.Derived.Items[i].Drift != 0) {
			t.Errorf("orders %+v derived %+v", o, s.Derived.Items[i])
		}
	}
	if !s.Pipeline.OK() || s.Pipeline.Data.Topic != shop.Topic {
		t.Errorf("pipeline: %+v", s.Pipeline)
	}
	for _, r := range s.Readings()[2:] {
		if r.Name != "pipeline" && (r.State != NotAvailable || r.Reason == "") {
			t.Errorf("%s: %+v, want not available with the reason", r.Name, r.Status)
		}
	}
	if s.Profile != "spring-article" {
		t.Errorf("profile %q", s.Profile)
	}
}
