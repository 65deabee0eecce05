package reconcile

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/fsctl/fsctl/internal/checkout/events"
	"github.com/fsctl/fsctl/internal/checkout/orders"
	"github.com/fsctl/fsctl/internal/checkout/stock"
	"github.com/fsctl/fsctl/internal/contract/sale"
	"github.com/fsctl/fsctl/internal/proof/verify"
	"github.com/fsctl/fsctl/internal/target/profile"
)

// book is what only fsctl serve offers reconcile, on top of what its profile declares: its sale
// definition, its Redis holds and order records compared with PostgreSQL order by order, its
// own scripts to repair them, the order log to re-publish a never-recorded reservation, and the
// rebuild of Redis from PostgreSQL.
type book struct {
	st *stock.Store
	db *orders.Store
	// whole is the sale as defined, sale the items this run reads.
	whole, sale sale.Sale
	pub         *events.Publisher
}

// openBook loads the sale's definition and narrows it to the items the run was asked for (an
// item the sale lacks is an error); they become the run's items.
func openBook(ctx context.Context, r *run) (*book, error) {
	b := &book{st: stock.New(r.t.Redis()), db: orders.On(r.t.Pool())}
	var err error
	if b.whole, err = b.db.LoadSale(ctx, r.cfg.SaleID); err != nil {
		return nil, err
	}
	if b.sale, err = only(b.whole, r.cfg.Items); err != nil {
		return nil, err
	}
	for _, it := range b.sale.Items {
		r.items = append(r.items, it.ID)
	}
	r.closer = append(r.closer, func() {
		if b.pub != nil {
			_ = b.pub.Close()
		}
	})
	return b, nil
}

// read compares every item order by order: Redis shard by shard, then one PostgreSQL snapshot.
func (b *book) read(ctx context.Context, r *run, items []*itemRead, lag int64) error {
	start := r.cfg.Now()
	sl := b.sale
	snap, err := b.st.Snapshot(ctx, sl.ID, sl.Items)
	if err != nil {
		return err
	}
	// The per-sale claims before PostgreSQL: a claim is taken before its order exists and given
	// back only after PostgreSQL closed the order, so an order still live in the later snapshot
	// that is older than this read had its claim here.
	var claims map[uuid.UUID]stock.Claim
	if b.whole.PerSaleLimit > 0 {
		if claims, err = b.st.SaleClaims(ctx, sl.ID); err != nil {
			return err
		}
	}
	states, err := readItems(ctx, b.st, b.db, sl)
	if err != nil {
		return err
	}
	a := analyzer{sale: sl, st: b.st, readStart: start, now: r.cfg.Now(), orphanAge: r.cfg.OrphanAge, lag: lag}
	if r.kafka != nil {
		a.republish = func(ctx context.Context, h stock.Hold, it sale.Item) error {
			sec, nsec := h.OrderID.Time().UnixTime()
			pub, err := b.publisher(r.cfg)
			if err != nil {
				return err
			}
			return pub.PublishOrderPlaced(ctx, events.OrderPlaced{
				OrderID: h.OrderID, SaleID: sl.ID, ItemID: it.ID, UserID: h.UserID, Slot: h.Slot, Shard: h.Shard, Shards: it.ShardCount(),
				// it.Epoch was read from PostgreSQL (openBook) before the holds: never newer than the hold's state.
				CreatedAt: time.Unix(sec, nsec).UTC(), ExpiresAt: h.ExpiresAt, IdemKey: h.IdemKey, Epoch: it.Epoch,
				SaleSlot: events.ClaimSlot(h.Claimed, h.SaleSlot),
			})
		}
	}
	for i, it := range items {
		an := a.item(states[i])
		it.ordered, it.inFlight = an.findings, an.inFlight
		if claims != nil {
			it.ordered = append(it.ordered, a.missingClaims(states[i], claims)...)
		}
		// What only the book knows joins the item's row: the orders closed, each shard with its
		// units in transit, the most live orders one buyer holds.
		c := states[i].counts
		it.row.Shards = snap[i].Shards
		it.row.Counts.Expired, it.row.Counts.Cancelled, it.row.Counts.Failed = c.Expired, c.Cancelled, c.Failed
		perUser := map[string]int{}
		for _, o := range states[i].live {
			perUser[o.UserID]++
			it.row.MaxLivePerUser = max(it.row.MaxLivePerUser, perUser[o.UserID])
		}
		// The item's Redis totals from the book's one snapshot: stock, the units in transit
		// between shards (still its stock) and holds read together, so a transfer or a reserve
		// between the profile's read and this one cannot show as a unit lost.
		it.state.Stock, it.state.Holds = snap[i].Stock, snap[i].Holds
	}
	return nil
}

// units judges a unit count that is off by delta: it waits for what is in flight order by order
// and for the other findings, then the fullest shard's counter moves by it.
func (b *book) units(r *run, it *itemRead, f *Finding, delta int64) bool {
	s := it.state
	switch {
	case it.inFlight > 0 || it.lag != 0:
		return false
	case len(it.ordered) > 0:
		f.Fix = "after the other findings are repaired"
	case verify.GaveOutTooMany(verify.FromState(s)):
		f.Fix = leftOversold
	default:
		f.Fix, f.Apply = b.adjust(r, s, delta)
	}
	return true
}

// adjust is the repair of a unit count that is off by delta once everything else agrees: the
// fullest shard's counter moves by it, with fsctl serve's own script.
func (b *book) adjust(r *run, s profile.ItemState, delta int64) (string, func(context.Context) error) {
	shards := s.Inventory.Shards
	shard := shards[0].Keys.Shard
	most := shards[0].Stock
	for _, sh := range shards {
		if sh.Stock > most {
			shard, most = sh.Keys.Shard, sh.Stock
		}
	}
	return fmt.Sprintf("move shard %d's counter by %+d", shard, delta), func(ctx context.Context) error {
		return b.st.AdjustStock(ctx, r.cfg.SaleID, s.Item, shard, len(shards), delta)
	}
}

// publisher is created on first use: only a repair re-publishes.
func (b *book) publisher(cfg Config) (*events.Publisher, error) {
	if b.pub == nil {
		pub, err := events.NewPublisher(cfg.Kafka, cfg.OrdersTopic)
		if err != nil {
			return nil, err
		}
		b.pub = pub
	}
	return b.pub, nil
}
