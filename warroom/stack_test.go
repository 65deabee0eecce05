package warroom

import (
	"context"
	"flag"
	"fmt"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/fsctl/fsctl/internal/checkout/orders"
	"github.com/fsctl/fsctl/internal/checkout/stock"
	"github.com/fsctl/fsctl/internal/harness/testenv"
	"github.com/fsctl/fsctl/internal/harness/testenv/eventually"
	"github.com/fsctl/fsctl/internal/platform/kafkaconn"
	checkouttest "github.com/fsctl/fsctl/server/servertest"
)

// capture, when set, writes the dashboard as it stands mid-burst (120x40, colours stripped) to the
// given file: how docs/warroom-snapshot.txt is made (see docs/warroom.md).
var capture = flag.String("warroom.capture", "", "write a mid-burst text capture of the dashboard to this file")

func stackSources(t testing.TB, c *checkouttest.Checkout, servers ...string) Sources {
	t.Helper()
	src, closeFn, err := Open(Endpoints{Sale: c.Sale.ID, RedisURL: c.RedisURL, PostgresURL: c.PostgresURL,
		Kafka: kafkaconn.Conn{Brokers: c.Brokers}, OrdersTopic: c.OrdersTopic, DeadLetterTopic: c.DeadLetterTopic, ConsumerGroup: c.ConsumerGroup,
		Servers: append([]string{c.Base}, servers...), AdminToken: checkouttest.AdminToken})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(closeFn)
	return src
}

// burst sends buyers purchases of item "hot" from n goroutines and counts the answers by status;
// pace spaces each goroutine's purchases so a dashboard can watch the burst happen.
func burst(t *testing.T, c *checkouttest.Checkout, buyers, workers int, pace time.Duration) map[int]int {
	t.Helper()
	tokens := make([]string, buyers)
	for i := range tokens {
		tokens[i] = c.Token(fmt.Sprintf("buyer-%d", i))
	}
	var mu sync.Mutex
	got := map[int]int{}
	var next atomic.Int64
	var wg sync.WaitGroup
	client := &http.Client{Timeout: 10 * time.Second}
	for range workers {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= buyers {
					return
				}
				req, _ := http.NewRequest(http.MethodPost, c.Base+"/api/v1/sales/"+c.Sale.ID+"/items/hot/purchase", nil)
				req.Header.Set("Authorization", "Bearer "+tokens[i])
				req.Header.Set("Idempotency-Key", fmt.Sprintf("k-%d", i))
				code := 0
				if resp, err := client.Do(req); err == nil {
					code = resp.StatusCode
					resp.Body.Close()
				}
				mu.Lock()
				got[code]++
				mu.Unlock()
				time.Sleep(pace)
			}
		})
	}
	wg.Wait()
	return got
}

// settle collects until the pipeline has caught up (no lag, every Redis hold pending in PostgreSQL).
func settle(t *testing.T, src Sources) Snapshot {
	t.Helper()
	var s Snapshot
	eventually.OK(t, 30*time.Second, func() error {
		s = Once(context.Background(), src, DefaultAlerts(), 0, CollectOptions{})
		if !s.Items.OK() || !s.Orders.OK() || !s.Pipeline.OK() || s.Pipeline.Data.Lag != 0 || s.Derived.InFlight != 0 {
			return fmt.Errorf("the pipeline did not settle: %+v", s)
		}
		return nil
	})
	return s
}

func TestSnapshotMatchesRedisAndPostgresAfterABurst(t *testing.T) {
	c := checkouttest.Start(t, checkouttest.Options{Quantity: 40, Limit: 1, Workers: true})
	src := stackSources(t, c)

	var m Model
	if *capture != "" {
		m = captureDuringBurst(t, c, src)
	} else {
		answers := burst(t, c, 100, 16, 0)
		if answers[http.StatusAccepted] != 40 || answers[http.StatusGone] != 60 {
			t.Fatalf("burst answers %v, want 40 reserved and 60 sold out", answers)
		}
	}
	s := settle(t, src)

	state, count := checkoutState(t, c)
	it, o := s.Items.Data[0], s.Orders.Data[0]
	if it.Remaining != state.Stock || it.Held != state.Holds || it.Quantity != 40 {
		t.Errorf("items %+v, redis %+v", it, state)
	}
	if o.Pending != count.Pending || o.Paid != count.Paid || o.Sold != count.Sold || o.Expired != count.Expired {
		t.Errorf("orders %+v, postgres %+v", o, count)
	}
	if it.Remaining != 0 || it.Held != 40 || o.Pending != 40 || s.Derived.MaxDrift != 0 || s.Derived.Items[0].Paid != 0 {
		t.Errorf("after 40 reservations of 40: %+v %+v %+v", it, o, s.Derived)
	}
	if tr := s.Traffic.Data.Outcomes; tr["RESERVED"] != 40 || tr["SOLD_OUT"] != 60 || s.Traffic.Data.Latency.Count < 100 {
		t.Errorf("traffic %+v", s.Traffic.Data)
	}
	if p := s.Pipeline.Data; p.Lag != 0 || p.DeadLetters != 0 || len(p.Partitions) != 3 {
		t.Errorf("pipeline %+v", p)
	}
	if !s.Control.OK() || s.Control.Data.Paused || s.Control.Data.Room != nil || len(s.Control.Data.Switches) != 4 {
		t.Errorf("control %+v", s.Control)
	}
	for _, a := range s.Alerts {
		if !strings.HasPrefix(a.Metric, "latency_") { // a loaded test machine may be slow; that is no fault
			t.Errorf("alert on a healthy settled sale: %v", a)
		}
	}
	if *capture != "" {
		t.Logf("captured; settled snapshot of the same run: items %+v orders %+v", it, o)
		_ = m
	}
}

// TestSnapshotOnRedisCluster: the war room on a checkout whose hot item is split over 4 shards on
// the local Redis Cluster's masters reads every shard and agrees with Redis and PostgreSQL.
func TestSnapshotOnRedisCluster(t *testing.T) {
	c := checkouttest.Start(t, checkouttest.Options{Quantity: 40, Limit: 1, Shards: 4, Cluster: true})
	src := stackSources(t, c)
	if answers := burst(t, c, 100, 16, 0); answers[http.StatusAccepted] != 40 || answers[http.StatusGone] != 60 {
		t.Fatalf("burst answers %v, want 40 reserved and 60 sold out", answers)
	}
	s := settle(t, src)
	state, count := checkoutState(t, c)
	it, o := s.Items.Data[0], s.Orders.Data[0]
	if it.Remaining != 0 || it.Held != 40 || it.Held != state.Holds || o.Pending != count.Pending || o.Pending != 40 || s.Derived.MaxDrift != 0 {
		t.Errorf("on the cluster: items %+v orders %+v derived %+v; redis %+v postgres %+v", it, o, s.Derived, state, count)
	}
}

// checkoutState reads the checkout's first item straight from its Redis and its PostgreSQL.
func checkoutState(t *testing.T, c *checkouttest.Checkout) (stock.ItemState, orders.ItemCounts) {
	t.Helper()
	ctx := context.Background()
	states, err := c.App.Stock.Snapshot(ctx, c.Sale.ID, c.Sale.Items)
	if err != nil {
		t.Fatal(err)
	}
	counts, err := c.App.Orders.Counts(ctx, c.Sale.ID)
	if err != nil {
		t.Fatal(err)
	}
	return states[0], counts[0]
}

func captureDuringBurst(t *testing.T, c *checkouttest.Checkout, src Sources) Model {
	t.Helper()
	m := New(Options{Sources: src, Alerts: DefaultAlerts()})
	next, _ := m.Update(tea.WindowSizeMsg{Width: 120, Height: 40})
	m = next.(Model)
	done := make(chan map[int]int)
	go func() { done <- burst(t, c, 100, 2, 150*time.Millisecond) }()
	var shot string
	readings := 0
	for tick := 0; ; tick++ {
		select {
		case answers := <-done:
			if shot == "" {
				t.Fatal("the burst ended before the capture")
			}
			if err := os.WriteFile(*capture, []byte(shot+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			t.Logf("burst answers %v; capture written to %s", answers, *capture)
			return m
		case <-time.After(250 * time.Millisecond):
		}
		slow := tick%DefaultSlowEvery == 0
		s := Collect(context.Background(), src, CollectOptions{FastOnly: !slow})
		next, _ := m.Update(SnapshotMsg{Snapshot: s})
		m = next.(Model)
		if slow && m.snap.Items.OK() {
			readings++
		}
		if left := m.snap.Items.Data; shot == "" && readings >= 2 && left[0].Remaining > 0 && left[0].Remaining < 40 {
			shot = strings.TrimRight(ansi.Strip(m.Render()), " \n")
		}
	}
}

func TestDownPartsShowDownAgainstTheRealStack(t *testing.T) {
	c := checkouttest.Start(t, checkouttest.Options{Quantity: 10, Limit: 1})
	dead := "http://" + testenv.ClosedAddr(t)
	src, closeFn, err := Open(Endpoints{Sale: c.Sale.ID, RedisURL: strings.Replace(dead, "http", "redis", 1), PostgresURL: c.PostgresURL,
		Kafka: kafkaconn.Conn{Brokers: []string{strings.TrimPrefix(dead, "http://")}}, OrdersTopic: c.OrdersTopic, ConsumerGroup: c.ConsumerGroup,
		Servers: []string{c.Base, dead}, AdminToken: "wrong-token"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(closeFn)
	if code, _ := c.Buy("alice", "hot", "k1"); code != http.StatusAccepted {
		t.Fatalf("purchase: %d", code)
	}
	s := Once(context.Background(), src, DefaultAlerts(), 0, CollectOptions{})
	for name, st := range map[string]Status{"items (redis)": s.Items.Status, "pipeline (kafka)": s.Pipeline.Status, "control (bad token)": s.Control.Status} {
		if st.State != Down || st.Error == "" {
			t.Errorf("%s: %+v, want down with the reason", name, st)
		}
	}
	if !strings.Contains(s.Control.Error, "401") {
		t.Errorf("control error %q does not say the token was refused", s.Control.Error)
	}
	if !s.Traffic.OK() || s.Traffic.Data.Servers != 1 || s.Traffic.Data.ServersTotal != 2 || s.Traffic.Data.Outcomes["RESERVED"] != 1 {
		t.Errorf("one server of two up: %+v", s.Traffic)
	}
	if !s.Orders.OK() {
		t.Errorf("postgres is up: %+v", s.Orders.Status)
	}
}

func TestOperatorActionsReachTheServer(t *testing.T) {
	c := checkouttest.Start(t, checkouttest.Options{Quantity: 10, Limit: 1})
	src := stackSources(t, c)
	ctx := context.Background()
	if err := src.Control.PauseSale(ctx, true); err != nil {
		t.Fatal(err)
	}
	if err := src.Control.SetSwitch(ctx, "payment", true); err != nil {
		t.Fatal(err)
	}
	s := Collect(ctx, src, CollectOptions{})
	if !s.Control.OK() || !s.Control.Data.Paused || !s.Control.Data.Switches["payment"] {
		t.Fatalf("after pause and payment off: %+v", s.Control)
	}
	if code, body := c.Buy("bob", "hot", "k1"); code != http.StatusServiceUnavailable || !strings.Contains(body, "PAUSED") {
		t.Fatalf("purchase on a paused sale: %d %s", code, body)
	}
	if err := src.Control.SetRoom(ctx, nil, new(30.0)); err == nil || !strings.Contains(err.Error(), "no waiting room") {
		t.Fatalf("room change on a sale without a room: %v", err)
	}
	if err := src.Control.PauseSale(ctx, false); err != nil {
		t.Fatal(err)
	}
	if err := src.Control.SetSwitch(ctx, "payment", false); err != nil {
		t.Fatal(err)
	}
	s = Collect(ctx, src, CollectOptions{})
	if s.Control.Data.Paused || s.Control.Data.Switches["payment"] {
		t.Fatalf("after resume: %+v", s.Control)
	}
}

// BenchmarkCollect measures one refresh against the local stack and the bundled checkout: the full
// one (every source, as on the slow tick and --once) and the fast one (metrics and Kafka only).
func BenchmarkCollect(b *testing.B) {
	c := checkouttest.Start(b, checkouttest.Options{Quantity: 100, Limit: 1})
	src := stackSources(b, c)
	for _, fast := range []bool{false, true} {
		b.Run(map[bool]string{false: "full", true: "fast"}[fast], func(b *testing.B) {
			for b.Loop() {
				s := Collect(context.Background(), src, CollectOptions{FastOnly: fast})
				if !s.Traffic.OK() {
					b.Fatal(s.Traffic.Error)
				}
			}
		})
	}
}
