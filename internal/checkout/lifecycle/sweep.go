package lifecycle

import (
	"context"
	"encoding/binary"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/fsctl/fsctl/internal/checkout/events"
	"github.com/fsctl/fsctl/internal/checkout/orders"
	"github.com/fsctl/fsctl/internal/checkout/stock"
	"github.com/fsctl/fsctl/internal/contract/sale"
)

// SweepReport is what one sweep found and did.
type SweepReport struct {
	// Republished holds had no order in PostgreSQL after OrphanAge: their OrderPlaced was
	// published again (a no-op if the first one was only slow).
	Republished int
	// Released holds belonged to orders PostgreSQL had already closed; Settled ones to paid orders.
	Released, Settled int
	// Transfers is how many units stuck between shards were delivered.
	Transfers int
	// Claims is how many per-sale claims no live order held after ClaimAge were given back.
	Claims int
}

// SweepOnce compares every live hold in Redis with PostgreSQL and finishes what a crash left
// half-done. A hold whose order never reached PostgreSQL (the server died between reserve and
// publish, or the publish was lost) is re-published, so the buyer who was told "reserved" gets
// the order, and the expiry job later returns the unit if it is never paid. A hold whose order is
// closed (the release after the commit failed) is released; one whose order is paid is settled.
func (s *Service) SweepOnce(ctx context.Context) (SweepReport, error) {
	var rep SweepReport
	s.forgetRepublished()
	ids, err := s.Orders.SaleIDs(ctx)
	if err != nil {
		return rep, err
	}
	for _, id := range ids {
		sl, err := s.Orders.LoadSale(ctx, id)
		if err != nil {
			return rep, err
		}
		for _, it := range sl.Items {
			if err := s.sweepItem(ctx, sl, it, &rep); err != nil {
				return rep, fmt.Errorf("sweep %s/%s: %w", sl.ID, it.ID, err)
			}
		}
		if sl.PerSaleLimit > 0 {
			// After the holds: a claim whose hold the sweep just released is given back here.
			shards := make(map[string]int, len(sl.Items))
			for _, it := range sl.Items {
				shards[it.ID] = it.ShardCount()
			}
			age := s.cfg.ClaimAge
			if age <= 0 {
				age = DefaultConfig().ClaimAge // never 0: that would take claims in flight
			}
			n, err := s.Stock.SweepClaims(ctx, sl.ID, shards, age)
			rep.Claims += n
			if err != nil {
				return rep, err
			}
			if n > 0 {
				s.Log.Warn("per-sale claims without a live order given back", "sale", sl.ID, "claims", n)
			}
		}
	}
	if s.Metrics.Republished != nil && rep.Republished > 0 {
		s.Metrics.Republished(rep.Republished)
	}
	if s.Metrics.Repaired != nil && rep.Released+rep.Settled > 0 {
		s.Metrics.Repaired(rep.Released + rep.Settled)
	}
	return rep, nil
}

func (s *Service) sweepItem(ctx context.Context, sl sale.Sale, it sale.Item, rep *SweepReport) error {
	if it.ShardCount() > 1 {
		n, err := s.Stock.RepairTransfers(ctx, sl.ID, it.ID, it.ShardCount(), s.cfg.TransferAge)
		if err != nil {
			return err
		}
		rep.Transfers += n
	}
	cutoff := s.Now().Add(-s.cfg.OrphanAge)
	for shard := range it.ShardCount() {
		holds, err := s.Stock.Holds(ctx, sl.ID, it.ID, shard, it.ShardCount())
		if err != nil {
			return err
		}
		var old []stock.Hold
		for _, h := range holds {
			if createdAt(h.OrderID).Before(cutoff) {
				old = append(old, h)
			}
		}
		if len(old) == 0 {
			continue
		}
		ids := make([]uuid.UUID, len(old))
		for i, h := range old {
			ids[i] = h.OrderID
		}
		statuses, err := s.Orders.Statuses(ctx, ids)
		if err != nil {
			return err
		}
		for _, h := range old {
			if err := s.sweepHold(ctx, sl.ID, it, h, statuses[h.OrderID], rep); err != nil {
				return err
			}
		}
	}
	return nil
}

func (s *Service) sweepHold(ctx context.Context, saleID string, it sale.Item, h stock.Hold, status string, rep *SweepReport) error {
	switch status {
	case "":
		if s.recentlyRepublished(h.OrderID) {
			return nil
		}
		err := s.Publisher.PublishOrderPlaced(ctx, events.OrderPlaced{
			OrderID: h.OrderID, SaleID: saleID, ItemID: it.ID, UserID: h.UserID, Slot: h.Slot, Shard: h.Shard, Shards: it.ShardCount(),
			// The epoch was read from PostgreSQL before the hold from Redis: if a rebuild came in
			// between, the order is stamped older than its state and dropped as stale, to be
			// re-published at a later sweep, never stamped newer and counted twice.
			CreatedAt: createdAt(h.OrderID), ExpiresAt: h.ExpiresAt, IdemKey: h.IdemKey, Epoch: it.Epoch,
			SaleSlot: events.ClaimSlot(h.Claimed, h.SaleSlot),
		})
		if err != nil {
			return fmt.Errorf("re-publish orphaned order %s: %w", h.OrderID, err)
		}
		s.markRepublished(h.OrderID)
		s.Log.Warn("orphaned hold re-published", "order", h.OrderID, "sale", saleID, "item", it.ID)
		rep.Republished++
	case orders.StatusPaid:
		ok, err := s.Stock.Settle(ctx, stock.Settle{SaleID: saleID, ItemID: it.ID, Shard: h.Shard, Shards: it.ShardCount(), OrderID: h.OrderID})
		if err != nil {
			return err
		}
		if ok {
			rep.Settled++
		}
	case orders.StatusExpired, orders.StatusCancelled, orders.StatusFailed:
		ok, err := s.Stock.Release(ctx, stock.Release{SaleID: saleID, ItemID: it.ID, Shard: h.Shard, Shards: it.ShardCount(), OrderID: h.OrderID, Status: status})
		if err != nil {
			return err
		}
		if ok {
			rep.Released++
			if s.Metrics.Released != nil {
				s.Metrics.Released("swept")
			}
			s.stockChanged(saleID, it.ID, it.ShardCount())
		}
	}
	return nil
}

// recentlyRepublished reports whether this instance re-published the order within the last
// OrphanAge.
func (s *Service) recentlyRepublished(id uuid.UUID) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	at, ok := s.republished[id]
	return ok && s.Now().Sub(at) < s.cfg.OrphanAge
}

func (s *Service) markRepublished(id uuid.UUID) {
	s.mu.Lock()
	s.republished[id] = s.Now()
	s.mu.Unlock()
}

// forgetRepublished drops the notes older than OrphanAge, so the map stays as small as the set of
// holds still waiting for the consumer.
func (s *Service) forgetRepublished() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for id, at := range s.republished {
		if s.Now().Sub(at) >= s.cfg.OrphanAge {
			delete(s.republished, id)
		}
	}
}

// createdAt reads the creation time a UUIDv7 carries in its first 48 bits.
func createdAt(id uuid.UUID) time.Time {
	var b [8]byte
	copy(b[2:], id[:6])
	return time.UnixMilli(int64(binary.BigEndian.Uint64(b[:])))
}
