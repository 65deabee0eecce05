package server

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/fsctl/fsctl/internal/checkout/stock"
)

// SoldOutMode is how an instance's local sold-out flag answers purchases of a sold-out item.
type SoldOutMode string

// The sold-out flag modes.
const (
	// SoldOutOff runs the reserve script for every purchase.
	SoldOutOff SoldOutMode = "off"
	// SoldOutVerify runs the reserve script on the buyer's home shard alone (no borrowing between
	// shards), so every answer is the script's own: a retry hears its reservation again, a buyer who
	// holds the unit hears ALREADY_PURCHASED, SOLD_OUT is remembered under the key. The default.
	SoldOutVerify SoldOutMode = "verify"
	// SoldOutTrust answers SOLD_OUT from memory without calling Redis at all: the cheapest, but a
	// lost "reserved" retried after the sell-out hears SOLD_OUT (the order itself stands).
	SoldOutTrust SoldOutMode = "trust"
)

// ParseSoldOutMode validates a mode name.
func ParseSoldOutMode(s string) (SoldOutMode, error) {
	switch m := SoldOutMode(s); m {
	case SoldOutOff, SoldOutVerify, SoldOutTrust:
		return m, nil
	}
	return "", fmt.Errorf("sold-out flag mode %q: must be off, verify or trust", s)
}

// soldOutFlags remembers, per instance, which items the reserve script has found sold out, so the
// flood of buyers after a sell-out is answered without running the script. A poller reads the
// flagged items' counters (one pipelined round trip) and clears a flag as soon as a release
// puts a unit back: an instance learns within one poll interval.
type soldOutFlags struct {
	stock Reserver
	log   *slog.Logger

	mu    sync.RWMutex
	items map[stock.ItemRef]struct{}
}

func newSoldOutFlags(st Reserver, log *slog.Logger) *soldOutFlags {
	return &soldOutFlags{stock: st, log: log, items: map[stock.ItemRef]struct{}{}}
}

func (f *soldOutFlags) has(ref stock.ItemRef) bool {
	f.mu.RLock()
	_, ok := f.items[ref]
	f.mu.RUnlock()
	return ok
}

func (f *soldOutFlags) set(ref stock.ItemRef) {
	f.mu.Lock()
	f.items[ref] = struct{}{}
	f.mu.Unlock()
}

// check clears the flags of items that have stock again.
func (f *soldOutFlags) check(ctx context.Context) error {
	f.mu.RLock()
	refs := make([]stock.ItemRef, 0, len(f.items))
	for r := range f.items {
		refs = append(refs, r)
	}
	f.mu.RUnlock()
	if len(refs) == 0 {
		return nil
	}
	left, err := f.stock.Remaining(ctx, refs)
	if err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for i, r := range refs {
		if left[i] > 0 {
			delete(f.items, r)
		}
	}
	return nil
}

func (f *soldOutFlags) run(ctx context.Context, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			cctx, cancel := context.WithTimeout(ctx, time.Second)
			if err := f.check(cctx); err != nil && ctx.Err() == nil {
				f.log.Warn("sold-out flags not refreshed", "err", err)
			}
			cancel()
		}
	}
}
