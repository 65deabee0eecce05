package reconcile_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fsctl/fsctl/internal/checkout/events"
	"github.com/fsctl/fsctl/internal/checkout/lifecycle"
	"github.com/fsctl/fsctl/internal/checkout/orders"
	"github.com/fsctl/fsctl/internal/checkout/stock"
	"github.com/fsctl/fsctl/internal/contract/outcome"
	"github.com/fsctl/fsctl/internal/contract/sale"
	"github.com/fsctl/fsctl/internal/harness/testenv"
	"github.com/fsctl/fsctl/reconcile"
	checkouttest "github.com/fsctl/fsctl/server/servertest"
	"github.com/google/uuid"
)

// TestRebuildWhileOrdersClose rebuilds Redis while buyers cancel, round after round: an order that
// closes in the middle of a rebuild must keep its unit. Units were lost two ways. Sold and the live
// orders were read apart, so an order cancelled between the reads was counted sold but got no hold
// back (the game day lost 8 to 14 units that way). And the load kept a counter it found, which a
// release racing the wipe had written back, instead of quantity − sold. Five filler items of 64
// shards each make the load long enough for cancels to land in it every round.
func TestRebuildWhileOrdersClose(t *testing.T) {
	const rounds, pool = 2, 500
	const quantity = rounds * pool
	sl := sale.Sale{PerUserLimit: 1, HoldTTL: 10 * time.Minute, OpensAt: time.Now().Add(-time.Minute),
		Items: []sale.Item{{ID: "hot", Quantity: quantity, Shards: 1, PriceCents: 4999}}}
	for i := range 5 {
		sl.Items = append(sl.Items, sale.Item{ID: fmt.Sprintf("filler-%d", i), Quantity: sale.MaxShards, Shards: sale.MaxShards, PriceCents: 100})
	}
	tg := startTarget(t, checkouttest.Options{Sale: &sl})
	ids := tg.buy(t, quantity)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cfg := tg.cfg
	cfg.RebuildRedis, cfg.Progress = true, io.Discard
	// A cancel whose release ran before the rebuild restored its hold leaves that hold behind; the
	// sweeper returns such units (here every hold is an hour old, so it need not wait).
	sweeper := lifecycle.New(lifecycle.DefaultConfig(), lifecycle.Deps{
		Orders: tg.c.App.Orders, Stock: tg.c.App.Stock, Log: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Now: func() time.Time { return time.Now().Add(time.Hour) },
	})

	outlasted := 0
	for r := range rounds {
		first := r * pool
		start := time.Now()
		cancelled := cancelWhile(t, ctx, tg, ids[first:first+pool], first, func() {
			rep, err := reconcile.Run(ctx, cfg)
			if err != nil {
				t.Errorf("round %d: rebuild: %v", r+1, err)
			}
			for _, a := range rep.Actions {
				if a.ItemID == "hot" {
					t.Logf("round %d: %s", r+1, a.What)
				}
			}
		})
		if cancelled < pool {
			outlasted++
		}
		t.Logf("round %d: %d cancels during a rebuild of %s", r+1, cancelled, time.Since(start).Round(time.Millisecond))
		if _, err := sweeper.SweepOnce(ctx); err != nil {
			t.Fatalf("round %d: sweep: %v", r+1, err)
		}
		rep := tg.run(t, false)
		for _, it := range rep.Items {
			if it.ItemID == "hot" && (it.Stock != quantity-it.Counts.Pending || it.Holds != it.Counts.Pending) {
				t.Fatalf("round %d, %d cancels during the rebuild: redis stock %d + holds %d, postgres %d pending of %d; findings %v",
					r+1, cancelled, it.Stock, it.Holds, it.Counts.Pending, quantity, findings(rep))
			}
		}
		if !rep.OK() {
			t.Fatalf("round %d: %v", r+1, findings(rep))
		}
	}
	if outlasted == 0 {
		t.Fatalf("in every round all %d orders were cancelled before the rebuild ended: the test proves nothing on a machine this slow", pool)
	}
}

// cancelWhile has four buyers at a time cancel their orders (buyer-<first+i> owns ids[i]), paced,
// for as long as during runs (or until every order is cancelled), and returns how many cancelled.
func cancelWhile(t *testing.T, ctx context.Context, tg *target, ids []uuid.UUID, first int, during func()) int {
	t.Helper()
	var next atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				case <-time.After(30 * time.Millisecond):
				}
				i := int(next.Add(1)) - 1
				if i >= len(ids) {
					return
				}
				if _, err := tg.c.App.Lifecycle.Cancel(ctx, ids[i], fmt.Sprintf("buyer-%d", first+i)); err != nil {
					t.Errorf("cancel buyer-%d: %v", first+i, err)
				}
			}
		})
	}
	during()
	close(stop)
	wg.Wait()
	return min(int(next.Load()), len(ids))
}

// TestRebuildRecordsTheLogItself: orders on the log that no consumer has recorded (a group held by
// a crashed instance, or one far behind) are recorded by the rebuild itself, so it neither waits for
// the group nor loses them. Here the group has no member at all: a rebuild that waited for it would
// time out, and one that did not record the log would reload every unit as for sale.
func TestRebuildRecordsTheLogItself(t *testing.T) {
	tg, lg, ctx, placed := lostWithThreeOnTheLog(t)
	if _, err := reconcile.Run(ctx, lg.cfg); err != nil {
		t.Fatalf("rebuild: %v", err)
	}
	lg.expect(t, ctx, placed, orders.StatusPending)
	rep := tg.run(t, false)
	if it := rep.Items[0]; !rep.OK() || it.Holds != 3 || it.Stock != 7 {
		t.Fatalf("after the rebuild: redis stock %d and %d holds, want 7 and 3; findings %v", it.Stock, it.Holds, findings(rep))
	}
}

// TestRecordLogWhileRedisIsGone: a Redis that was killed takes seconds to come back (a cluster
// waits 2 s before its masters take writes), and the game day kills a Kafka broker soon after. The
// order log is recorded in PostgreSQL while Redis is still unreachable (RecordLog), so the rebuild
// after it does not read the log again: here Kafka is unreachable by then, and the rebuild still
// restores every order of the log. Without RecordLog the three orders would be reloaded as for sale.
func TestRecordLogWhileRedisIsGone(t *testing.T) {
	tg, lg, ctx, placed := lostWithThreeOnTheLog(t)
	gone := lg.cfg
	gone.RedisURL = "redis://" + testenv.ClosedAddr(t)
	n, err := reconcile.RecordLog(ctx, gone)
	if err != nil || n != 3 {
		t.Fatalf("order log recorded with Redis down: %d events, %v; want 3", n, err)
	}
	lg.expect(t, ctx, placed, orders.StatusPending)

	noKafka := lg.cfg
	noKafka.LogRecorded, noKafka.Timeout = true, time.Second
	noKafka.Kafka.Brokers = []string{testenv.ClosedAddr(t)}
	rep, err := reconcile.Run(ctx, noKafka)
	if err != nil {
		t.Fatalf("rebuild after the log was recorded, Kafka unreachable: %v", err)
	}
	if len(rep.Actions) < 2 || !strings.Contains(rep.Actions[1].What, "recorded in PostgreSQL after Redis lost the sale") {
		t.Errorf("rebuild actions %+v: want the log said recorded before", rep.Actions)
	}
	after := tg.run(t, false)
	if it := after.Items[0]; !after.OK() || it.Holds != 3 || it.Stock != 7 {
		t.Fatalf("after the rebuild: redis stock %d and %d holds, want 7 and 3; findings %v", it.Stock, it.Holds, findings(after))
	}
}

// TestALateHandOffIsStaleNotSoldTwice: an OrderPlaced that reaches the log after the rebuild read
// it — its reservation was made on the Redis being replaced, its hand-off was still on its way —
// is not in the snapshot the rebuild loads, so its unit is on sale again. PostgreSQL must drop it
// (its epoch is older than the item's), not record it: recorded, it would count that unit twice,
// and PostgreSQL would refuse an order a later buyer was told RESERVED for. Its own buyer was told
// to retry (TestHandOffOutlivedByARebuildIsNotAYes, server package). Here every unit is then sold:
// each buyer's order must be in PostgreSQL, none refused.
func TestALateHandOffIsStaleNotSoldTwice(t *testing.T) {
	tg, lg := withStalledLog(t, 10)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	late := lg.reserve(t, ctx, 4)
	cfg := tg.cfg
	cfg.RebuildRedis, cfg.Progress = true, io.Discard
	if _, err := reconcile.Run(ctx, cfg); err != nil {
		t.Fatalf("rebuild: %v", err)
	}
	lg.publish(t, ctx, tg.c.OrdersTopic, late) // the hand-offs land now, on the log the consumer reads
	lg.sellOut(t, ctx, 10)                     // every unit
	lg.expect(t, ctx, late, "")
}

// TestAHandOffDuringTheRebuildsReadIsCounted forces the window of docs/gameday.md's finding 8: four
// hand-offs of reservations made on the Redis being replaced reach the log after the rebuild read
// where it ends, and the group records them before the rebuild bumps the epoch. They are then
// orders of the current epoch, in PostgreSQL before the snapshot, so the rebuild restores their
// holds: their units are not put back on sale, and when every unit is sold no buyer told RESERVED
// is refused. (Their own buyers were told to retry: the confirm finds the state replaced.) After
// the bump the same hand-offs are stale (TestALateHandOffIsStaleNotSoldTwice).
func TestAHandOffDuringTheRebuildsReadIsCounted(t *testing.T) {
	tg, lg := withStalledLog(t, 10)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	late := lg.reserve(t, ctx, 4)
	cfg := tg.cfg // the log the checkout's group consumes
	cfg.RebuildRedis = true
	var landed atomic.Bool
	cfg.Progress = writerFunc(func(line string) {
		if !strings.HasPrefix(line, "reconcile: recorded ") || landed.Load() {
			return
		}
		// The rebuild has read the log up to its end and recorded it; the epoch is not bumped yet.
		lg.publish(t, ctx, tg.c.OrdersTopic, late)
		for ctx.Err() == nil {
			ids := make([]uuid.UUID, len(late))
			for i, e := range late {
				ids[i] = e.OrderID
			}
			st, err := tg.c.App.Orders.Statuses(ctx, ids)
			if err == nil && len(st) == len(ids) {
				landed.Store(true)
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
	})
	rep, err := reconcile.Run(ctx, cfg)
	if err != nil || !landed.Load() {
		t.Fatalf("rebuild: %v; the late hand-offs recorded before the bump: %v", err, landed.Load())
	}
	for _, a := range rep.Actions {
		t.Log(a.What)
	}
	lg.expect(t, ctx, late, orders.StatusPending)
	lg.sellOut(t, ctx, 6) // every unit the late hand-offs left
	if after := tg.run(t, false); !after.OK() {
		t.Fatalf("after the sale: %v", findings(after))
	}
}

// writerFunc is a progress writer that hands each line to f.
type writerFunc func(line string)

func (f writerFunc) Write(p []byte) (int, error) {
	f(string(p))
	return len(p), nil
}

// stalledLog is an orders topic and a consumer group nobody consumes, beside a running checkout:
// events published there stay unrecorded until a rebuild records them.
type stalledLog struct {
	tg  *target
	cfg reconcile.Config
}

func withStalledLog(t *testing.T, quantity int64) (*target, *stalledLog) {
	t.Helper()
	tg := newTarget(t, quantity, 2)
	cfg := tg.cfg
	cfg.RebuildRedis, cfg.Progress = true, io.Discard
	cfg.OrdersTopic, cfg.ConsumerGroup = testenv.KafkaTopic(t, 2), testenv.ID(t, "stalled")
	return tg, &stalledLog{tg: tg, cfg: cfg}
}

// lostWithThreeOnTheLog is a sale of 10 whose group records nothing, three reservations on its
// log, and then Redis losing the sale: what a rebuild starts from. ctx ends with the test, within
// a minute.
func lostWithThreeOnTheLog(t *testing.T) (*target, *stalledLog, context.Context, []events.OrderPlaced) {
	t.Helper()
	tg, lg := withStalledLog(t, 10)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	placed := lg.reserve(t, ctx, 3)
	lg.publish(t, ctx, lg.cfg.OrdersTopic, placed)
	if err := tg.c.App.Stock.Reset(ctx, tg.c.Sale); err != nil { // Redis loses the sale
		t.Fatal(err)
	}
	return tg, lg, ctx, placed
}

// reserve makes n reservations in Redis (buyers late-0 …) and returns the OrderPlaced events their
// hand-offs would carry, not yet published.
func (lg *stalledLog) reserve(t *testing.T, ctx context.Context, n int) []events.OrderPlaced {
	t.Helper()
	c := lg.tg.c
	var out []events.OrderPlaced
	for i := range n {
		user := fmt.Sprintf("late-%d", i)
		rv, err := c.App.Stock.Reserve(ctx, stock.Request{SaleID: c.Sale.ID, ItemID: "hot", UserID: user,
			IdemKey: "k", OrderID: uuid.New(), Shards: 2})
		if err != nil || rv.Outcome != outcome.Reserved {
			t.Fatalf("reserve for %s: %v %v", user, rv.Outcome, err)
		}
		out = append(out, events.OrderPlaced{OrderID: rv.OrderID, SaleID: c.Sale.ID, ItemID: "hot", UserID: user,
			Slot: rv.Slot, Shard: rv.Shard, Shards: rv.Shards, CreatedAt: time.Now().UTC(), ExpiresAt: rv.ExpiresAt, IdemKey: "k", Epoch: rv.Epoch})
	}
	return out
}

func (lg *stalledLog) publish(t *testing.T, ctx context.Context, topic string, placed []events.OrderPlaced) {
	pub, err := events.NewPublisher(lg.cfg.Kafka, topic)
	if err != nil {
		t.Fatal(err)
	}
	defer pub.Close()
	for _, e := range placed {
		if err := pub.PublishOrderPlaced(ctx, e); err != nil {
			t.Errorf("publish order %s: %v", e.OrderID, err)
		}
	}
}

// sellOut has n buyers buy the units left, each answered 202 with its order PENDING in PostgreSQL
// (none refused), and one more buyer told 410 SOLD_OUT.
func (lg *stalledLog) sellOut(t *testing.T, ctx context.Context, n int) {
	t.Helper()
	ids := lg.tg.buy(t, n)
	statuses, err := lg.tg.c.App.Orders.Statuses(ctx, ids)
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range ids {
		if statuses[id] != orders.StatusPending {
			t.Fatalf("a buyer told RESERVED after the rebuild: order %s is %q in PostgreSQL", id, statuses[id])
		}
	}
	if code, _ := lg.tg.c.Buy("one-more", "hot", "k"); code != 410 {
		t.Fatalf("one more buyer once the %d units left were sold: %d, want 410 SOLD_OUT", n, code)
	}
}

// expect wants every placed order to have status in PostgreSQL ("" for none).
func (lg *stalledLog) expect(t *testing.T, ctx context.Context, placed []events.OrderPlaced, status string) {
	t.Helper()
	ids := make([]uuid.UUID, len(placed))
	for i, e := range placed {
		ids[i] = e.OrderID
	}
	statuses, err := lg.tg.c.App.Orders.Statuses(ctx, ids)
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range ids {
		if statuses[id] != status {
			t.Errorf("order %s from the log: %q in PostgreSQL after the rebuild, want %q", id, statuses[id], status)
		}
	}
}

// onLine is a progress writer that closes seen at the first line starting with prefix.
type onLine struct {
	prefix string
	seen   chan struct{}
	once   sync.Once
}

func (o *onLine) Write(p []byte) (int, error) {
	if strings.HasPrefix(string(p), o.prefix) {
		o.once.Do(func() { close(o.seen) })
	}
	return len(p), nil
}

// TestAReplayAfterARebuildHearsItsReservation: a buyer told RESERVED who sends the same
// Idempotency-Key again after Redis was lost and rebuilt hears the same RESERVED and order id.
// The records lived only in Redis, and the rebuild gave back each order and the buyer's slot but
// not the key, so the replay met the full slot and heard ALREADY_PURCHASED with no order (chaos
// seeds 37, 45 and 57). The key now stays with the order in PostgreSQL and comes back with it, on
// a sale with a per-sale limit too, whose claims also name the key. A new key of the same buyer is
// still refused.
func TestAReplayAfterARebuildHearsItsReservation(t *testing.T) {
	for _, perSale := range []int{0, 1} {
		t.Run(fmt.Sprintf("per-sale limit %d", perSale), func(t *testing.T) { replayAfterRebuild(t, perSale) })
	}
}

func replayAfterRebuild(t *testing.T, perSale int) {
	sl := sale.Sale{PerUserLimit: 1, PerSaleLimit: perSale, HoldTTL: 10 * time.Minute, OpensAt: time.Now().Add(-time.Minute),
		Items: []sale.Item{{ID: "hot", Quantity: 10, Shards: 1, PriceCents: 4999}}}
	tg := startTarget(t, checkouttest.Options{Sale: &sl})
	ids := tg.buy(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := tg.c.App.Stock.Reset(ctx, tg.c.Sale); err != nil { // Redis loses the sale
		t.Fatal(err)
	}
	cfg := tg.cfg
	cfg.RebuildRedis, cfg.Progress = true, io.Discard
	if _, err := reconcile.Run(ctx, cfg); err != nil {
		t.Fatalf("rebuild: %v", err)
	}
	for i, id := range ids {
		code, body := tg.c.Buy(fmt.Sprintf("buyer-%d", i), "hot", fmt.Sprintf("k-%d", i))
		if code != 202 || !strings.Contains(body, id.String()) {
			t.Errorf("buyer %d replays its key after the rebuild: %d %s, want 202 with order %s", i, code, body, id)
		}
	}
	if code, body := tg.c.Buy("buyer-0", "hot", "another-key"); code != 409 {
		t.Errorf("buyer 0 with a new key after the rebuild: %d %s, want 409 (one per buyer)", code, body)
	}
	if rep := tg.run(t, false); !rep.OK() {
		t.Fatalf("after the replays: findings %v", findings(rep))
	}
}
