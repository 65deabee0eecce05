package saleops

import (
	"context"
	"fmt"

	"github.com/fsctl/fsctl/internal/contract/sale"
)

// SaleFlags keeps a sale's pause flag in PostgreSQL: *orders.Store.
type SaleFlags interface {
	SetPaused(ctx context.Context, saleID string, paused bool) error
}

// ShardFlags writes a sale's pause flag to every shard's meta in Redis: *stock.Store, or the
// reservation service's client.
type ShardFlags interface {
	SetPaused(ctx context.Context, sl sale.Sale, paused bool) error
}

// PauseError is a pause or resume that did not finish, saying how far it got.
type PauseError struct {
	// Saved: PostgreSQL holds the new flag but Redis does not yet, so buyers do not see it; doing
	// it again finishes it. Not saved: nothing changed.
	Saved bool
	// Err is the store's error.
	Err error
}

func (e *PauseError) Error() string {
	if e.Saved {
		return "saved in PostgreSQL but not live in Redis yet, run it again: " + e.Err.Error()
	}
	return "nothing changed: " + e.Err.Error()
}

func (e *PauseError) Unwrap() error { return e.Err }

// SetPaused pauses (paused true) or resumes sl: the one procedure both the admin API and the CLI
// run. PostgreSQL first: it is what a preload or a rebuild reloads Redis from, so a pause saved
// there is never undone by a reload, even when Redis is not written. Then the meta of every shard,
// which the reserve script reads on every call, so every server instance honours it at once. A
// failure is a *PauseError.
func SetPaused(ctx context.Context, pg SaleFlags, rd ShardFlags, sl sale.Sale, paused bool) error {
	if err := pg.SetPaused(ctx, sl.ID, paused); err != nil {
		return &PauseError{Err: err}
	}
	if err := rd.SetPaused(ctx, sl, paused); err != nil {
		return &PauseError{Saved: true, Err: err}
	}
	return nil
}

// PauseChange is what a pause or resume changed, in each store.
type PauseChange struct {
	Sale     string     `json:"sale"`
	Paused   bool       `json:"paused"`
	Postgres FlagChange `json:"postgres"`
	Redis    ShardCount `json:"redis"`
	// Room says the waiting room, when the sale has one, admits as before.
	Room string `json:"room,omitempty"`
}

// FlagChange is PostgreSQL's pause flag before and after.
type FlagChange struct {
	Before bool `json:"before"`
	After  bool `json:"after"`
}

// ShardCount counts the shards whose meta holds the pause flag, of all the sale's shards.
type ShardCount struct {
	Shards       int `json:"shards"`
	PausedBefore int `json:"pausedBefore"`
	PausedAfter  int `json:"pausedAfter"`
}

// Pause pauses (paused true) or resumes the sale id through SetPaused, and says what each store
// held before and after.
func (s *Stores) Pause(ctx context.Context, id string, paused bool) (PauseChange, error) {
	sl, err := s.Load(ctx, id)
	if err != nil {
		return PauseChange{}, err
	}
	c := PauseChange{Sale: sl.ID, Paused: paused, Postgres: FlagChange{Before: sl.Paused, After: paused}}
	if c.Redis.Shards, c.Redis.PausedBefore, err = s.pausedShards(ctx, sl); err != nil {
		return c, err
	}
	if err := SetPaused(ctx, s.Orders, s.Stock, sl, paused); err != nil {
		return c, err
	}
	if _, c.Redis.PausedAfter, err = s.pausedShards(ctx, sl); err != nil {
		return c, err
	}
	if sl.Room.Enabled {
		c.Room = fmt.Sprintf("the waiting room admits as before (admissions paused: %s); PUT /admin/v1/sales/%s/room {\"paused\": %v} changes that",
			yesNo(sl.Room.Paused), sl.ID, paused)
	}
	return c, nil
}

// pausedShards counts the sale's shards and those whose meta holds the pause flag.
func (s *Stores) pausedShards(ctx context.Context, sl sale.Sale) (shards, paused int, err error) {
	metas, err := s.Stock.Metas(ctx, sl.ID, sl.Items)
	if err != nil {
		return 0, 0, err
	}
	for _, item := range metas {
		for _, m := range item {
			shards++
			if m.Paused {
				paused++
			}
		}
	}
	return shards, paused, nil
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}
