package readmodel

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/segmentio/kafka-go"

	"github.com/fsctl/fsctl/events"
	"github.com/fsctl/fsctl/stock"
)

// DefaultFlush is how often a Publisher reads and publishes the items changed since its last
// flush: the page lags a change by about this plus the consumer's batch, and the stock Redis gets
// at most one round trip per flush from each publishing process, however busy the sale.
const DefaultFlush = 100 * time.Millisecond

// Sink publishes messages to the stock topic; *events.Publisher implements it.
type Sink interface {
	Publish(ctx context.Context, msgs ...kafka.Message) error
}

// Publisher publishes stock snapshots of the items it is told changed. Changed never blocks, so
// the order consumer and the lifecycle jobs pay nothing for it.
type Publisher struct {
	rdb   redis.UniversalClient
	sink  Sink
	flush time.Duration
	log   *slog.Logger

	mu    sync.Mutex
	dirty map[string]stock.ItemRef
	wake  chan struct{}
}

// NewPublisher returns a Publisher that reads rdb and publishes to sink at most every flush
// (DefaultFlush when zero); Run starts it.
func NewPublisher(rdb redis.UniversalClient, sink Sink, flush time.Duration, log *slog.Logger) *Publisher {
	if flush <= 0 {
		flush = DefaultFlush
	}
	return &Publisher{rdb: rdb, sink: sink, flush: flush, log: log, dirty: map[string]stock.ItemRef{}, wake: make(chan struct{}, 1)}
}

// Changed marks items whose Redis stock changed; their snapshots go out with the next flush.
func (p *Publisher) Changed(refs ...stock.ItemRef) {
	if len(refs) == 0 {
		return
	}
	p.mu.Lock()
	for _, r := range refs {
		p.dirty[r.SaleID+"/"+r.ItemID] = r
	}
	p.mu.Unlock()
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

// Run flushes until ctx ends. A flush that fails (Redis or Kafka away) keeps its items dirty and
// is tried again after a pause, so the last change of an item is published once they are back.
func (p *Publisher) Run(ctx context.Context) error {
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
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
			select {
			case p.wake <- struct{}{}:
			default:
			}
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
