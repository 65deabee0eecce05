package orders

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/fsctl/fsctl/internal/contract/outcome"
	"github.com/fsctl/fsctl/internal/contract/sale"
	"github.com/jackc/pgx/v5"
)

// SaveSale creates or updates a sale and its items in one transaction. It never touches an item's
// sold count, refuses to lower a quantity below what is already sold, and removes items that left the
// definition only while they have no orders.
func (s *Store) SaveSale(ctx context.Context, sl sale.Sale) error {
	if err := sl.Validate(); err != nil {
		return outcome.Errorf(outcome.InvalidRequest, "%v", err)
	}
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `
			INSERT INTO sales (id, name, opens_at, per_user_limit, hold_ttl_ms, paused, closes_at, wait_replicas,
				wait_timeout_ms, room, rate_limits, wait_policy, per_sale_limit, reveal)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)
			ON CONFLICT (id) DO UPDATE SET
				name = EXCLUDED.name, opens_at = EXCLUDED.opens_at,
				per_user_limit = EXCLUDED.per_user_limit, hold_ttl_ms = EXCLUDED.hold_ttl_ms,
				paused = EXCLUDED.paused, closes_at = EXCLUDED.closes_at,
				wait_replicas = EXCLUDED.wait_replicas, wait_timeout_ms = EXCLUDED.wait_timeout_ms,
				room = EXCLUDED.room, rate_limits = EXCLUDED.rate_limits, wait_policy = EXCLUDED.wait_policy,
				per_sale_limit = EXCLUDED.per_sale_limit, reveal = EXCLUDED.reveal,
				updated_at = `+nextRevision,
			sl.ID, sl.Name, sl.OpensAt, sl.PerUserLimit, sl.HoldTTL.Milliseconds(), sl.Paused,
			nullTime(sl.ClosesAt), sl.WaitReplicas, sl.WaitTimeout.Milliseconds(), sl.Room, sl.RateLimits,
			sl.WaitPolicy, sl.PerSaleLimit, sl.Reveal); err != nil {
			return fmt.Errorf("upsert sale: %w", err)
		}
		sold, err := lockSold(ctx, tx, sl.ID)
		if err != nil {
			return err
		}
		keep := make([]string, 0, len(sl.Items))
		for _, it := range sl.Items {
			if n, ok := sold[it.ID]; ok && it.Quantity < n {
				return outcome.Errorf(outcome.Unprocessable,
					"sale %s: item %s: quantity %d is below the %d units already sold", sl.ID, it.ID, it.Quantity, n)
			}
			if _, err := tx.Exec(ctx, `
				INSERT INTO sale_items (sale_id, id, name, quantity, price_cents, shards)
				VALUES ($1, $2, $3, $4, $5, $6)
				ON CONFLICT (sale_id, id) DO UPDATE SET
					name = EXCLUDED.name, quantity = EXCLUDED.quantity, price_cents = EXCLUDED.price_cents,
					shards = EXCLUDED.shards`,
				sl.ID, it.ID, it.Name, it.Quantity, it.PriceCents, it.ShardCount()); err != nil {
				return fmt.Errorf("upsert item %s: %w", it.ID, err)
			}
			keep = append(keep, it.ID)
		}
		return removeItems(ctx, tx, sl.ID, keep)
	})
	if err != nil {
		return fmt.Errorf("save sale %s: %w", sl.ID, err)
	}
	return nil
}

// lockSold locks the sale's existing item rows (so no order is placed between the check and the
// update) and returns their sold counts.
func lockSold(ctx context.Context, tx pgx.Tx, saleID string) (map[string]int64, error) {
	rows, err := tx.Query(ctx, `SELECT id, sold FROM sale_items WHERE sale_id = $1 ORDER BY id FOR UPDATE`, saleID)
	if err != nil {
		return nil, fmt.Errorf("lock items: %w", err)
	}
	sold := make(map[string]int64)
	var id string
	var n int64
	_, err = pgx.ForEachRow(rows, []any{&id, &n}, func() error {
		sold[id] = n
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("lock items: %w", err)
	}
	return sold, nil
}

// removeItems deletes the items no longer in the definition, refusing when one of them has orders.
func removeItems(ctx context.Context, tx pgx.Tx, saleID string, keep []string) error {
	var busy []string
	err := tx.QueryRow(ctx, `
		SELECT coalesce(array_agg(i.id ORDER BY i.id), '{}') FROM sale_items i
		WHERE i.sale_id = $1 AND NOT (i.id = ANY($2))
		  AND EXISTS (SELECT 1 FROM orders o WHERE o.sale_id = i.sale_id AND o.item_id = i.id)`,
		saleID, keep).Scan(&busy)
	if err != nil {
		return fmt.Errorf("check removed items: %w", err)
	}
	if len(busy) > 0 {
		return outcome.Errorf(outcome.Unprocessable,
			"sale %s: items %v have orders and cannot be removed from the sale", saleID, busy)
	}
	if _, err := tx.Exec(ctx, `DELETE FROM sale_items WHERE sale_id = $1 AND NOT (id = ANY($2))`, saleID, keep); err != nil {
		return fmt.Errorf("remove items: %w", err)
	}
	return nil
}

// LoadSale reads a sale and its items (ordered by id). A missing sale is an *outcome.Error with
// code outcome.NotFound.
func (s *Store) LoadSale(ctx context.Context, id string) (sale.Sale, error) {
	var sl sale.Sale
	var ttlMS, waitMS int64
	var closes *time.Time
	err := s.pool.QueryRow(ctx, `
		SELECT id, name, opens_at, per_user_limit, hold_ttl_ms, paused, closes_at, wait_replicas, wait_timeout_ms,
			room, rate_limits, wait_policy, per_sale_limit, reveal, `+revisionOf+`
		FROM sales WHERE id = $1`, id).
		Scan(&sl.ID, &sl.Name, &sl.OpensAt, &sl.PerUserLimit, &ttlMS, &sl.Paused, &closes, &sl.WaitReplicas, &waitMS,
			&sl.Room, &sl.RateLimits, &sl.WaitPolicy, &sl.PerSaleLimit, &sl.Reveal, &sl.Revision)
	if errors.Is(err, pgx.ErrNoRows) {
		return sale.Sale{}, outcome.Errorf(outcome.NotFound, "sale %s not found", id)
	}
	if err != nil {
		return sale.Sale{}, fmt.Errorf("load sale %s: %w", id, err)
	}
	sl.HoldTTL = time.Duration(ttlMS) * time.Millisecond
	sl.WaitTimeout = time.Duration(waitMS) * time.Millisecond
	sl.OpensAt = sl.OpensAt.UTC()
	if closes != nil {
		sl.ClosesAt = closes.UTC()
	}
	rows, err := s.pool.Query(ctx, `
		SELECT id, name, quantity, price_cents, shards, epoch FROM sale_items WHERE sale_id = $1 ORDER BY id`, id)
	if err != nil {
		return sale.Sale{}, fmt.Errorf("load items of sale %s: %w", id, err)
	}
	sl.Items, err = pgx.CollectRows(rows, pgx.RowToStructByPos[sale.Item])
	if err != nil {
		return sale.Sale{}, fmt.Errorf("load items of sale %s: %w", id, err)
	}
	return sl, nil
}

// nullTime stores the zero time as SQL NULL.
func nullTime(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}

// SetRoom records an operator's change of a sale's waiting room (pause, admission rate, cap) and
// returns the sale's new revision (sale.Sale.Revision), which the live room is then given.
func (s *Store) SetRoom(ctx context.Context, saleID string, r sale.Room) (int64, error) {
	var rev int64
	err := s.pool.QueryRow(ctx, `UPDATE sales SET room = $2, updated_at = `+nextRevision+`
		WHERE id = $1 RETURNING `+revisionOf, saleID, r).Scan(&rev)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, outcome.Errorf(outcome.NotFound, "sale %s not found", saleID)
	}
	if err != nil {
		return 0, fmt.Errorf("set room of sale %s: %w", saleID, err)
	}
	return rev, nil
}

// A sale's revision is its row's last change in microseconds. Every change moves it strictly
// forward: the wall clock at the change (not the transaction's start, which a change that waited
// for the row lock would carry from before the change it waited for), and never less than one
// microsecond past the last.
const (
	nextRevision = `greatest(clock_timestamp(), sales.updated_at + interval '1 microsecond')`
	revisionOf   = `(extract(epoch FROM updated_at) * 1000000)::bigint`
)

// Epochs reads the epoch of every item of a sale (sale.Item.Epoch).
func (s *Store) Epochs(ctx context.Context, saleID string) (map[string]int64, error) {
	return s.epochs(ctx, `SELECT id, epoch FROM sale_items WHERE sale_id = $1`, saleID)
}

// NextEpochs bumps the epoch of every item of a sale and returns the new ones: a rebuild's fence.
// Each bump takes the item's row lock, which place_order holds while it decides, so every
// placement with the old epoch is either committed before it or refused as stale after.
func (s *Store) NextEpochs(ctx context.Context, saleID string) (map[string]int64, error) {
	return s.epochs(ctx, `UPDATE sale_items SET epoch = epoch + 1 WHERE sale_id = $1 RETURNING id, epoch`, saleID)
}

func (s *Store) epochs(ctx context.Context, sql, saleID string) (map[string]int64, error) {
	rows, err := s.pool.Query(ctx, sql, saleID)
	if err != nil {
		return nil, fmt.Errorf("epochs of sale %s: %w", saleID, err)
	}
	out := map[string]int64{}
	var id string
	var epoch int64
	_, err = pgx.ForEachRow(rows, []any{&id, &epoch}, func() error {
		out[id] = epoch
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("epochs of sale %s: %w", saleID, err)
	}
	return out, nil
}

// SaleName is a sale's id and name, as a list or a shell completion offers it.
type SaleName struct {
	ID   string
	Name string
}

// SaleNames returns every sale's id and name, ordered by id, ended sales included: one query,
// cheap enough for a shell completion.
func (s *Store) SaleNames(ctx context.Context) ([]SaleName, error) {
	rows, err := s.pool.Query(ctx, `SELECT id, name FROM sales ORDER BY id`)
	if err != nil {
		return nil, fmt.Errorf("list sales: %w", err)
	}
	names, err := pgx.CollectRows(rows, pgx.RowToStructByPos[SaleName])
	if err != nil {
		return nil, fmt.Errorf("list sales: %w", err)
	}
	return names, nil
}
