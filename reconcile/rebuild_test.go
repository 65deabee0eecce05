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

	"github.com/google/uuid"
	"github.com/segmentio/kafka-go"

	"github.com/fsctl/fsctl/lifecycle"
	"github.com/fsctl/fsctl/reconcile"
	"github.com/fsctl/fsctl/sale"
	"github.com/fsctl/fsctl/testenv"
	checkouttest "github.com/fsctl/fsctl/testenv/checkout"
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

// TestRebuildDrainsToWhereTheLogStood: a rebuild waits for the order consumer to commit what was on
// the orders topic when it began, not for a lag of 0, which a sale under way (payments, re-published
// holds) may never show at the moment of a poll. Events that arrive once the drain has begun are
// left on the log here, and the rebuild must still finish.
func TestRebuildDrainsToWhereTheLogStood(t *testing.T) {
	tg := newTarget(t, 10, 1)
	topic, group := testenv.KafkaTopic(t, 1), testenv.ID(t, "group")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	w := &kafka.Writer{Addr: kafka.TCP(tg.c.Brokers...), Topic: topic, RequiredAcks: kafka.RequireAll,
		BatchTimeout: time.Millisecond, Transport: &kafka.Transport{MetadataTTL: time.Second}}
	defer w.Close()
	write := func(n int) {
		t.Helper()
		msgs := make([]kafka.Message, n)
		for i := range msgs {
			msgs[i] = kafka.Message{Value: []byte("event")}
		}
		if err := w.WriteMessages(ctx, msgs...); err != nil {
			t.Fatalf("write %d events: %v", n, err)
		}
	}
	write(1) // offset 0: on the log, not yet consumed, when the drain begins

	cfg := tg.cfg
	cfg.RebuildRedis, cfg.OrdersTopic, cfg.ConsumerGroup, cfg.DrainTimeout = true, topic, group, 20*time.Second
	waiting := make(chan struct{})
	cfg.Progress = &onLine{prefix: "reconcile: waiting for", seen: waiting}
	done := make(chan error, 1)
	go func() {
		_, err := reconcile.Run(ctx, cfg)
		done <- err
	}()
	select {
	case <-waiting:
	case err := <-done:
		t.Fatalf("the rebuild ended before it waited for the unconsumed event: %v", err)
	}
	write(5) // a sale under way keeps writing
	// The consumer commits the event that was there when the drain began.
	kc := &kafka.Client{Addr: kafka.TCP(tg.c.Brokers...), Transport: &kafka.Transport{MetadataTTL: time.Second}}
	res, err := kc.OffsetCommit(ctx, &kafka.OffsetCommitRequest{GroupID: group, GenerationID: -1,
		Topics: map[string][]kafka.OffsetCommit{topic: {{Partition: 0, Offset: 1}}}})
	if err != nil {
		t.Fatalf("commit offset 1: %v", err)
	}
	for _, p := range res.Topics[topic] {
		if p.Error != nil {
			t.Fatalf("commit offset 1: %v", p.Error)
		}
	}
	if err := <-done; err != nil {
		t.Fatalf("with 5 events behind that arrived after it began, the rebuild: %v", err)
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
