package articleshop

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/segmentio/kafka-go"
)

// Backoff bounds for retrying database and broker errors; the consumer never exits on them,
// because the orders are already promised to buyers.
const (
	minBackoff = 100 * time.Millisecond
	maxBackoff = 5 * time.Second
)

// errSkip marks a message that can never be stored (duplicate buyer, CHECK violation, unknown
// item): it is logged and its offset committed so it does not block the partition.
var errSkip = errors.New("skip message")

// Run consumes order messages and writes them to PostgreSQL until ctx ends. An offset is committed
// only after its order's transaction commits, so a crash redelivers rather than loses orders.
func (s *Shop) Run(ctx context.Context) error {
	backoff := minBackoff
	for {
		m, err := s.reader.FetchMessage(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			if errors.Is(err, io.EOF) { // the reader was closed: Run is over
				return nil
			}
			s.log.Warn("fetch failed; retrying", "err", err, "backoff", backoff)
			if !sleep(ctx, backoff) {
				return nil
			}
			backoff = min(backoff*2, maxBackoff)
			continue
		}
		backoff = minBackoff
		if !s.handle(ctx, m) {
			return nil
		}
		// Commit even if ctx just ended: the transaction is done, so its offset must not be lost.
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		err = s.reader.CommitMessages(cctx, m)
		cancel()
		if err != nil {
			// Redelivery is harmless: the insert is a no-op on the same order id.
			s.log.Warn("offset commit failed; message may be redelivered", "offset", m.Offset, "err", err)
		}
	}
}

// handle stores one message, retrying database errors until they pass or ctx ends. It returns
// false only when ctx ended before the message was settled (its offset must then not be committed).
func (s *Shop) handle(ctx context.Context, m kafka.Message) bool {
	var msg OrderMessage
	if err := json.Unmarshal(m.Value, &msg); err != nil || msg.UserID == "" || msg.ItemID <= 0 {
		s.log.Error("malformed order message; skipped", "partition", m.Partition, "offset", m.Offset, "err", err)
		return true
	}
	id, err := uuid.Parse(msg.OrderID)
	if err != nil {
		s.log.Error("malformed order id; skipped", "partition", m.Partition, "offset", m.Offset, "orderId", msg.OrderID)
		return true
	}
	backoff := minBackoff
	for {
		err := s.store(ctx, id, msg)
		if err == nil || errors.Is(err, errSkip) {
			return true
		}
		if ctx.Err() != nil {
			return false
		}
		s.log.Warn("storing order failed; retrying", "order", id, "err", err, "backoff", backoff)
		if !sleep(ctx, backoff) {
			return false
		}
		backoff = min(backoff*2, maxBackoff)
	}
}

// store inserts the order and counts it as sold in one transaction. A redelivered order (same id)
// is a no-op; constraint violations are permanent, so they are logged and reported as errSkip.
func (s *Shop) store(ctx context.Context, id uuid.UUID, msg OrderMessage) error {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	tag, err := tx.Exec(ctx,
		`INSERT INTO flash_sale_order (id, item_id, user_id, status, created_at)
		 VALUES ($1, $2, $3, 'PENDING', $4) ON CONFLICT (id) DO NOTHING`,
		id, msg.ItemID, msg.UserID, msg.CreatedAt)
	if err != nil {
		return s.classify(err, id, msg)
	}
	if tag.RowsAffected() == 0 {
		return nil // redelivery of an order already stored
	}
	if _, err := tx.Exec(ctx, `UPDATE flash_sale_item SET sold = sold + 1 WHERE id = $1`, msg.ItemID); err != nil {
		return s.classify(err, id, msg)
	}
	return tx.Commit(ctx)
}

// classify turns constraint violations into errSkip (with a log line saying why) and leaves every
// other error, which may pass on retry, as it is.
func (s *Shop) classify(err error, id uuid.UUID, msg OrderMessage) error {
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) {
		return err
	}
	switch pgErr.Code {
	case "23505": // unique_violation: the same user already has an order for this item
		s.log.Warn("duplicate order for user and item; skipped", "order", id, "item", msg.ItemID, "user", msg.UserID, "constraint", pgErr.ConstraintName)
	case "23514": // check_violation: sold would exceed quantity, i.e. Redis oversold
		s.log.Error("OVERSELL BLOCKED BY DATABASE CHECK; order dropped", "order", id, "item", msg.ItemID, "user", msg.UserID, "constraint", pgErr.ConstraintName)
	case "23503": // foreign_key_violation: the item does not exist
		s.log.Error("order for unknown item; skipped", "order", id, "item", msg.ItemID)
	default:
		return err
	}
	return fmt.Errorf("%w: %s", errSkip, pgErr.Code)
}

// sleep waits d or until ctx ends, reporting whether the full wait happened.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
