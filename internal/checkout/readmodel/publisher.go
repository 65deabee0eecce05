package readmodel

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/segmentio/kafka-go"

	"github.com/fsctl/fsctl/internal/checkout/events"
	"github.com/fsctl/fsctl/internal/checkout/stock"
)

// DefaultFlush is how often a Publisher reads and publishes the items changed since its last
// flush: the page lags a change by about this plus the consumer's batch, and the stock Redis gets
// at most one round trip per flush from each publishing process, however busy the sale.
const DefaultFlush = 100 * time.Millisecond

// DefaultRefresh is how often a Publisher publishes again every item it published in the last
// RefreshFor, changed or not. Some changes of stock tell no publisher (a hold released by the API
// after a failed hand-off, a preload, a reconcile rebuild): with the refresh the page is right
// again within this long instead of at the item's next change. It costs one pipelined read per
// refresh per publishing process, whatever the number of API instances.
const DefaultRefresh = 5 * time.Second

// RefreshFor is how long after an item's last change the refresh keeps publishing it.
const RefreshFor = 10 * time.Minute

// Sink publishes messages to the stock topic; *events.Publisher implements it.
type Sink interface {
	Publish(ctx context.Context, msgs ...kafka.Message) error
}

// Publisher publishes stock snapshots of the items it is told changed. Changed never blocks, so
// the order consumer and the lifecycle jobs pay nothing for it.
type Publisher struct {
	rdb     redis.UniversalClient
	sink    Sink
	flush   time.Duration
	refresh time.Duration
	log     *slog.Logger

	mu    sync.Mutex
	dirty map[string]stock.ItemRef
	// recent holds the items changed in the last RefreshFor and when they last were: what the
	// refresh publishes again.
	recent map[string]recentItem
	wake   chan struct{}
}

type recentItem struct {
	ref     stock.ItemRef
	changed time.Time
}

// NewPublisher returns a Publisher that reads rdb and publishes to sink at most every flush
// (DefaultFlush when zero) and publishes its recent items again every refresh (DefaultRefresh
// when zero, never when negative); Run starts it.
func NewPublisher(rdb redis.UniversalClient, sink Sink, flush, refresh time.Duration, log *slog.Logger) *Publisher {
	if flush <= 0 {
		flush = DefaultFlush
	}
	if refresh == 0 {
		refresh = DefaultRefresh
	}
	return &Publisher{rdb: rdb, sink: sink, flush: flush, refresh: refresh, log: log,
		dirty: map[string]stock.ItemRef{}, recent: map[string]recentItem{}, wake: make(chan struct{}, 1)}
}

// Changed marks items whose Redis stock changed; their snapshots go out with the next flush.
func (p *Publisher) Changed(refs ...stock.ItemRef) {
	if len(refs) == 0 {
		return
	}
	now := time.Now()
	p.mu.Lock()
	for _, r := range refs {
		k := r.SaleID + "/" + r.ItemID
		p.dirty[k] = r
		p.recent[k] = recentItem{ref: r, changed: now}
	}
	p.mu.Unlock()
	p.poke()
}

func (p *Publisher) poke() {
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

// Refresh marks every item changed in the last RefreshFor dirty again, and forgets older ones.
func (p *Publisher) Refresh() {
	cutoff := time.Now().Add(-RefreshFor)
	p.mu.Lock()
	for k, it := range p.recent {
		if it.changed.Before(cutoff) {
			delete(p.recent, k)
			continue
		}
		p.dirty[k] = it.ref
	}
	p.mu.Unlock()
	p.poke()
}

// Run flushes until ctx ends, and refreshes every refresh interval. A flush that fails (Redis or
// Kafka away) keeps its items dirty and is tried again after a pause, so the last change of an
// item is published once they are back.
func (p *Publisher) Run(ctx context.Context) error {
	var refresh <-chan time.Time
	if p.refresh > 0 {
		t := time.NewTicker(p.refresh)
		defer t.Stop()
		refresh = t.C
	}
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-refresh:
			p.Refresh()
			continue // the wake it poked flushes
		case <-p.wake:
		}
		if err := p.Flush(ctx); err != nil && ctx.Err() == nil {
			p.log.Warn("stock snapshots not published; retrying", "err", err)
			p.wakeLater(ctx, time.Second)
		}
		// Coalesce: changes in the next interval go out together, in one read.
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(p.flush):
		}
	}
}

func (p *Publisher) wakeLater(ctx context.Context, d time.Duration) {
	time.AfterFunc(d, func() {
		if ctx.Err() == nil {
			p.poke()
		}
	})
}

// Flush reads the dirty items in one round trip and publishes their snapshots.
func (p *Publisher) Flush(ctx context.Context) error {
	p.mu.Lock()
	refs := make([]stock.ItemRef, 0, len(p.dirty))
	for _, r := range p.dirty {
		refs = append(refs, r)
	}
	clear(p.dirty)
	p.mu.Unlock()
	if len(refs) == 0 {
		return nil
	}
	err := p.publish(ctx, refs)
	if err != nil {
		p.mu.Lock()
		for _, r := range refs {
			if _, again := p.dirty[r.SaleID+"/"+r.ItemID]; !again {
				p.dirty[r.SaleID+"/"+r.ItemID] = r
			}
		}
		p.mu.Unlock()
	}
	return err
}

func (p *Publisher) publish(ctx context.Context, refs []stock.ItemRef) error {
	rctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	snaps, err := Read(rctx, p.rdb, refs)
	if err != nil {
		return err
	}
	msgs := make([]kafka.Message, 0, len(snaps))
	for _, s := range snaps {
		m, err := events.EncodeStockSnapshot(s)
		if err != nil {
			return err
		}
		msgs = append(msgs, m)
	}
	pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	return p.sink.Publish(pctx, msgs...)
}
