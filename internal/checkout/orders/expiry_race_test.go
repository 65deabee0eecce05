package orders_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/fsctl/fsctl/internal/checkout/orders"
	"github.com/fsctl/fsctl/internal/contract/sale"
	"github.com/fsctl/fsctl/internal/harness/testenv/eventually"
	"github.com/google/uuid"
)

// expirers runs ExpireDue in n goroutines until stop is called, collecting every order returned
// and every error, as several server instances would.
type expirers struct {
	mu      sync.Mutex
	expired []orders.Order
	errs    []error
	done    chan struct{}
	wg      sync.WaitGroup
}

func startExpirers(s *orders.Store, n, limit int) *expirers {
	e := &expirers{done: make(chan struct{})}
	for range n {
		e.wg.Go(func() {
			for {
				select {
				case <-e.done:
					return
				default:
				}
				got, err := s.ExpireDue(context.Background(), limit)
				e.mu.Lock()
				e.expired = append(e.expired, got...)
				if err != nil {
					e.errs = append(e.errs, err)
				}
				e.mu.Unlock()
			}
		})
	}
	return e
}

// stop waits until no unclaimed PENDING order of the store is left (every one is due by then, so
// the expirers must take them all) or one of them fails, then stops the expirers and returns what
// they expired, failing on any error. The deadline only guards against a hang.
func (e *expirers) stop(t *testing.T, s *orders.Store) map[uuid.UUID]orders.Order {
	t.Helper()
	halt := sync.OnceFunc(func() { close(e.done); e.wg.Wait() })
	defer halt() // when the wait fails too: no expirer outlives the test
	eventually.OK(t, 60*time.Second, func() error {
		var left int
		if err := s.Pool().QueryRow(context.Background(),
			`SELECT count(*) FROM orders WHERE status = 'PENDING' AND paying_since IS NULL`).Scan(&left); err != nil {
			t.Fatalf("count unexpired: %v", err)
		}
		e.mu.Lock()
		failed := len(e.errs) > 0
		e.mu.Unlock()
		if left > 0 && !failed {
			return fmt.Errorf("%d due orders never expired", left)
		}
		return nil
	})
	halt()
	if len(e.errs) > 0 {
		t.Fatalf("%d ExpireDue calls failed, first: %v", len(e.errs), e.errs[0])
	}
	byID := make(map[uuid.UUID]orders.Order, len(e.expired))
	for _, o := range e.expired {
		if _, dup := byID[o.ID]; dup {
			t.Errorf("order %s expired twice", o.ID)
		}
		if o.Status != orders.StatusExpired {
			t.Errorf("ExpireDue returned %+v, not EXPIRED", o)
		}
		byID[o.ID] = o
	}
	return byID
}

// THE RACE: payments claim orders while the expiry job, on three "instances", expires them as they
// fall due. Every order must end either paid or expired, never both, and each expiry is reported
// exactly once.
func TestClaimRacesExpiry(t *testing.T) {
	t.Parallel()
	s := openStore(t)
	ctx := context.Background()
	const n = 200
	if err := s.SaveSale(ctx, testSale("race", sale.Item{ID: "item", Quantity: n, Shards: 8})); err != nil {
		t.Fatalf("save sale: %v", err)
	}
	ps := make([]orders.Placement, n)
	for i := range ps {
		ps[i] = placement("race", "item", userN(i), 0)
		ps[i].Shard = i % 8
	}
	mustPlace(t, s, ps, orders.Placed)
	// Spread the expiries over the next 200 milliseconds, so claims land on both sides of them.
	if _, err := s.Pool().Exec(ctx,
		`UPDATE orders SET expires_at = now() + (abs(hashtext(id::text)) % 200) * interval '1 millisecond'`); err != nil {
		t.Fatalf("set expiries: %v", err)
	}
	exp := startExpirers(s, 3, 16)
	claims := make([]orders.Claim, n)
	claimErrs := make([]error, n)
	var wg sync.WaitGroup
	for i, p := range ps {
		wg.Go(func() { _, claims[i], claimErrs[i] = s.ClaimPayment(ctx, p.OrderID, p.UserID) })
	}
	wg.Wait()
	expired := exp.stop(t, s)

	var claimed int
	for i, p := range ps {
		o, wasExpired := expired[p.OrderID]
		switch {
		case claimErrs[i] != nil:
			t.Errorf("claim %d: %v", i, claimErrs[i])
		case claims[i] == orders.ClaimOK:
			claimed++
			if wasExpired {
				t.Errorf("order %d was claimed and expired", i)
			}
			paid, changed, err := s.MarkPaid(ctx, p.OrderID, fmt.Sprintf("ref-%d", i))
			if err != nil || !changed || paid.Status != orders.StatusPaid {
				t.Errorf("pay claimed order %d: got %+v, %v, %v; want PAID", i, paid, changed, err)
			}
		case claims[i] == orders.ClaimExpired:
			if !wasExpired {
				t.Errorf("order %d: claim answered expired, but no ExpireDue call returned it", i)
			}
		default:
			t.Errorf("claim %d: got %v, want ok or expired", i, claims[i])
		}
		if wasExpired && (o.UserID != p.UserID || o.Shard != p.Shard || o.Slot != p.Slot) {
			t.Errorf("expired order %+v does not carry its placement %+v", o, p)
		}
	}
	c := checkItem(t, s, "race", "item", int64(claimed))
	if c.Paid != int64(claimed) || c.Expired != int64(len(expired)) || c.Paid+c.Expired != n {
		t.Errorf("counts %+v: want %d paid and %d expired (one each), %d in all", c, claimed, len(expired), n)
	}
	t.Logf("%d claimed and paid, %d expired", claimed, len(expired))
}

// Several expiry jobs over many items while the consumer keeps placing orders that are due at once:
// every order is expired exactly once and no call fails (a deadlock would surface as an error).
func TestConcurrentExpiryWhilePlacing(t *testing.T) {
	t.Parallel()
	s := openStore(t)
	ctx := context.Background()
	const items, perItem, placers, batches, batchSize = 8, 25, 3, 15, 16
	var defs []sale.Item
	for i := range items {
		defs = append(defs, sale.Item{ID: fmt.Sprintf("item-%d", i), Quantity: 10000})
	}
	if err := s.SaveSale(ctx, testSale("busy", defs...)); err != nil {
		t.Fatalf("save sale: %v", err)
	}
	var seq int
	next := func() orders.Placement {
		seq++
		p := placement("busy", defs[seq%items].ID, userN(seq), 0)
		p.ExpiresAt = time.Now().Add(-time.Minute) // due as soon as it lands
		return p
	}
	var initial []orders.Placement
	for range items * perItem {
		initial = append(initial, next())
	}
	mustPlace(t, s, initial, orders.Placed)
	// Each placer's batches span every item, so placers and expirers contend on the same rows.
	work := make([][]orders.Placement, placers*batches)
	for i := range work {
		for range batchSize {
			work[i] = append(work[i], next())
		}
	}

	exp := startExpirers(s, 4, 7)
	var wg sync.WaitGroup
	placeErrs := make([]error, len(work))
	for w := range placers {
		wg.Go(func() {
			for b := w; b < len(work); b += placers {
				res, err := s.PlaceBatch(ctx, work[b])
				for _, r := range res {
					if r.Result != orders.Placed && err == nil {
						err = fmt.Errorf("placement %s: %v %s", r.OrderID, r.Result, r.Reason)
					}
				}
				placeErrs[b] = err
			}
		})
	}
	wg.Wait()
	for b, err := range placeErrs {
		if err != nil {
			t.Fatalf("place batch %d: %v", b, err)
		}
	}
	expired := exp.stop(t, s)

	total := len(initial) + len(work)*batchSize
	if len(expired) != total {
		t.Errorf("expired %d distinct orders, want all %d", len(expired), total)
	}
	var sumExpired int64
	for _, it := range defs {
		c := checkItem(t, s, "busy", it.ID, 0)
		sumExpired += c.Expired
	}
	if sumExpired != int64(len(expired)) {
		t.Errorf("PostgreSQL counts %d EXPIRED, ExpireDue returned %d", sumExpired, len(expired))
	}
	if again, err := s.ExpireDue(ctx, 100); err != nil || len(again) != 0 {
		t.Fatalf("after the run: got %d more, %v; want nothing left", len(again), err)
	}
}
