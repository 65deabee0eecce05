// Package control holds the operator's kill switches: named flags in Redis that every server
// instance polls, so one operator action reaches the whole fleet within a bounded time.
package control

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// Key is the Redis hash of the switches: name → "1" when the switch is thrown.
const Key = "fs:switches"

// The kill switches. Throwing one turns its action OFF everywhere.
const (
	// Purchase stops every purchase (answers 503 DISABLED); holds, payments and jobs go on.
	Purchase = "purchase"
	// Payment stops charging (503 DISABLED); holds are kept, so buyers can pay once it is back.
	Payment = "payment"
	// Expiry stops the expiry job (holds outlive their TTL until it is back).
	Expiry = "expiry"
	// Sweeper stops the orphaned-hold sweeper and the payment claim resolver.
	Sweeper = "sweeper"
)

// Names lists every switch.
var Names = []string{Purchase, Payment, Expiry, Sweeper}

// Valid reports whether name is a known switch.
func Valid(name string) bool { return slices.Contains(Names, name) }

// Store reads and writes the switches.
type Store struct {
	rdb redis.UniversalClient
	key string
}

// NewStore returns a Store over rdb keeping the switches under key (Key when empty; tests and
// side-by-side deployments use their own).
func NewStore(rdb redis.UniversalClient, key string) *Store {
	if key == "" {
		key = Key
	}
	return &Store{rdb: rdb, key: key}
}

// Get returns the thrown state of every switch.
func (s *Store) Get(ctx context.Context) (map[string]bool, error) {
	vals, err := s.rdb.HGetAll(ctx, s.key).Result()
	if err != nil {
		return nil, fmt.Errorf("read kill switches: %w", err)
	}
	out := make(map[string]bool, len(Names))
	for _, n := range Names {
		out[n] = vals[n] == "1"
	}
	return out, nil
}

// Set throws (off=true) or resets a switch.
func (s *Store) Set(ctx context.Context, name string, off bool) error {
	if !Valid(name) {
		return fmt.Errorf("unknown kill switch %q (known: %v)", name, Names)
	}
	var err error
	if off {
		err = s.rdb.HSet(ctx, s.key, name, "1").Err()
	} else {
		err = s.rdb.HDel(ctx, s.key, name).Err()
	}
	if err != nil {
		return fmt.Errorf("set kill switch %s: %w", name, err)
	}
	return nil
}

// Watcher keeps a local copy of the switches, refreshed every interval, so the hot path reads them
// from memory. A thrown switch is honoured by every instance within one interval.
type Watcher struct {
	store    *Store
	interval time.Duration
	log      *slog.Logger
	state    atomic.Pointer[map[string]bool]
}

// NewWatcher returns a Watcher; call Run to start polling.
func NewWatcher(store *Store, interval time.Duration, log *slog.Logger) *Watcher {
	w := &Watcher{store: store, interval: interval, log: log}
	w.state.Store(&map[string]bool{})
	return w
}

// Off reports whether the switch is thrown (its action is turned off).
func (w *Watcher) Off(name string) bool { return (*w.state.Load())[name] }

// Refresh reads the switches once.
func (w *Watcher) Refresh(ctx context.Context) error {
	st, err := w.store.Get(ctx)
	if err != nil {
		return err
	}
	w.state.Store(&st)
	return nil
}

// Run polls until ctx ends. When Redis cannot be read the last known state is kept.
func (w *Watcher) Run(ctx context.Context) {
	t := time.NewTicker(w.interval)
	defer t.Stop()
	for {
		if err := w.Refresh(ctx); err != nil && ctx.Err() == nil {
			w.log.Warn("kill switches not refreshed; keeping the last known state", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
