package readmodel

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/segmentio/kafka-go"
	"golang.org/x/sync/singleflight"

	"github.com/fsctl/fsctl/internal/checkout/events"
	"github.com/fsctl/fsctl/internal/checkout/stock"
	"github.com/fsctl/fsctl/internal/contract/sale"
	"github.com/fsctl/fsctl/internal/platform/kafkaconn"
)

// Defaults of a View's liveness: how often it compares its progress with the topic's end, and how
// long since it last proved itself caught up before it stops vouching for its numbers.
const (
	DefaultProbe    = 500 * time.Millisecond
	DefaultMaxStale = 3 * time.Second
)

// ViewConfig configures a View.
type ViewConfig struct {
	Kafka kafkaconn.Conn
	Topic string
	// Probe and MaxStale default to DefaultProbe and DefaultMaxStale.
	Probe, MaxStale time.Duration
}

// View is an API instance's copy of the latest stock snapshot of every item, tailed from the
// compacted stock topic. It is safe for concurrent use.
type View struct {
	cfg    ViewConfig
	rdb    redis.UniversalClient
	log    *slog.Logger
	client *kafka.Client
	dialer *kafka.Dialer

	mu    sync.RWMutex
	items map[string]events.StockSnapshot
	seeds singleflight.Group
	// seeded is when each sale was last seeded (guarded by mu): at most one read per SeedEvery.
	seeded map[string]time.Time

	// caughtUp is the UnixNano time up to which every snapshot published had been read (0: never).
	caughtUp atomic.Int64
	live     atomic.Bool
}

// NewView returns a View of cfg.Topic that seeds items no snapshot names from rdb; Run tails. An
// error is a Kafka connection wrong in form.
func NewView(cfg ViewConfig, rdb redis.UniversalClient, log *slog.Logger) (*View, error) {
	if cfg.Probe <= 0 {
		cfg.Probe = DefaultProbe
	}
	if cfg.MaxStale <= 0 {
		cfg.MaxStale = DefaultMaxStale
	}
	client, _, err := cfg.Kafka.Client(2 * time.Second)
	if err != nil {
		return nil, err
	}
	dialer, err := cfg.Kafka.Dialer(2 * time.Second)
	if err != nil {
		return nil, err
	}
	return &View{cfg: cfg, rdb: rdb, log: log, items: map[string]events.StockSnapshot{}, seeded: map[string]time.Time{},
		client: client, dialer: dialer}, nil
}

// ErrNotLive says the View cannot vouch for its numbers: the caller reads Redis instead.
var ErrNotLive = errors.New("stock read model not caught up with its topic")

// Apply keeps s unless the View holds a snapshot of the item read at or after it; it reports
// whether s was kept.
func (v *View) Apply(s events.StockSnapshot) bool {
	k := s.SaleID + "/" + s.ItemID
	v.mu.Lock()
	defer v.mu.Unlock()
	if old, ok := v.items[k]; ok && !s.Newer(old) {
		return false
	}
	v.items[k] = s
	return true
}

// Live reports whether the View proved itself caught up with the topic within MaxStale.
func (v *View) Live() bool {
	at := v.caughtUp.Load()
	return at != 0 && time.Since(time.Unix(0, at)) < v.cfg.MaxStale
}

// CaughtUpAt is the time up to which the View had read every snapshot published (zero: never).
func (v *View) CaughtUpAt() time.Time {
	if at := v.caughtUp.Load(); at != 0 {
		return time.Unix(0, at)
	}
	return time.Time{}
}

// Stock is what a View knows of a sale's remaining stock.
type Stock struct {
	// Remaining is each item's remaining units.
	Remaining map[string]int64
	// AsOf is the time up to which the View had read every snapshot published: a change recorded
	// before it (plus the publisher's flush) is in Remaining.
	AsOf time.Time
	// ReadAt is when the newest of the snapshots was read from Redis: it changes only when a
	// number may have.
	ReadAt time.Time
}

// Stock returns the remaining stock of a sale's items; ErrNotLive when the View is not live or an
// item has no snapshot yet.
func (v *View) Stock(saleID string, items []sale.Item) (Stock, error) {
	if !v.Live() {
		return Stock{}, ErrNotLive
	}
	out := Stock{Remaining: make(map[string]int64, len(items)), AsOf: v.CaughtUpAt()}
	v.mu.RLock()
	defer v.mu.RUnlock()
	for _, it := range items {
		s, ok := v.items[saleID+"/"+it.ID]
		if !ok {
			return Stock{}, fmt.Errorf("%w: no snapshot of %s/%s yet", ErrNotLive, saleID, it.ID)
		}
		out.Remaining[it.ID] = s.Remaining
		if s.ReadAt.After(out.ReadAt) {
			out.ReadAt = s.ReadAt
		}
	}
	return out, nil
}

// SeedEvery is the least time between two seeds of one sale by a View: a Redis that fails the
// seed is not asked again on every page request.
const SeedEvery = time.Second

// errSeedWait says a sale was seeded less than SeedEvery ago.
var errSeedWait = errors.New("stock read model: sale seeded moments ago; not yet again")

// Seed reads from Redis the items of a sale that no snapshot names yet (nobody bought or released
// one since the topic began), so the View can answer for them from then on: once per item and
// instance when it works, at most every SeedEvery when it does not.
func (v *View) Seed(ctx context.Context, saleID string, items []sale.Item) error {
	var missing []stock.ItemRef
	v.mu.Lock()
	for _, it := range items {
		if _, ok := v.items[saleID+"/"+it.ID]; !ok {
			missing = append(missing, stock.ItemRef{SaleID: saleID, ItemID: it.ID, Shards: it.ShardCount()})
		}
	}
	if len(missing) > 0 {
		if time.Since(v.seeded[saleID]) < SeedEvery {
			v.mu.Unlock()
			return errSeedWait
		}
		if len(v.seeded) > 4096 {
			clear(v.seeded)
		}
		v.seeded[saleID] = time.Now()
	}
	v.mu.Unlock()
	if len(missing) == 0 {
		return nil
	}
	_, err, _ := v.seeds.Do(saleID, func() (any, error) {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 3*time.Second)
		defer cancel()
		snaps, err := Read(ctx, v.rdb, missing)
		for _, s := range snaps {
			v.Apply(s)
		}
		return nil, err
	})
	return err
}

// Run tails every partition of the topic from its beginning until ctx ends, and probes the topic's
// end to know whether the View is live.
func (v *View) Run(ctx context.Context) error {
	parts, err := v.partitions(ctx)
	for err != nil {
		v.log.Warn("stock topic unreachable; the sale page reads Redis every ReadModelTTL until it is back", "topic", v.cfg.Topic, "err", err)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Second):
		}
		parts, err = v.partitions(ctx)
	}
	next := make([]atomic.Int64, len(parts)) // the next offset to read, per partition
	var wg sync.WaitGroup
	for i, p := range parts {
		r := kafka.NewReader(kafka.ReaderConfig{Brokers: v.cfg.Kafka.Brokers, Dialer: v.dialer, Topic: v.cfg.Topic, Partition: p,
			MinBytes: 1, MaxBytes: 4 << 20, MaxWait: kafkaconn.IdleFetchWait, ReadBackoffMax: time.Second})
		if err := r.SetOffset(kafka.FirstOffset); err != nil {
			return fmt.Errorf("stock topic partition %d: %w", p, err)
		}
		wg.Go(func() {
			defer r.Close()
			v.tail(ctx, r, &next[i])
		})
	}
	v.probe(ctx, parts, next)
	wg.Wait()
	return ctx.Err()
}

func (v *View) partitions(ctx context.Context) ([]int, error) {
	mctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	md, err := v.client.Metadata(mctx, &kafka.MetadataRequest{Topics: []string{v.cfg.Topic}})
	if err != nil {
		return nil, err
	}
	if len(md.Topics) != 1 || md.Topics[0].Error != nil || len(md.Topics[0].Partitions) == 0 {
		return nil, fmt.Errorf("stock topic %s has no partitions", v.cfg.Topic)
	}
	var ids []int
	for _, p := range md.Topics[0].Partitions {
		ids = append(ids, p.ID)
	}
	return ids, nil
}

func (v *View) tail(ctx context.Context, r *kafka.Reader, next *atomic.Int64) {
	for {
		m, err := r.ReadMessage(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			continue // the reader retries a lost broker itself
		}
		next.Store(m.Offset + 1)
		s, err := events.DecodeStockSnapshot(m.Value)
		if err != nil {
			v.log.Warn("skipping an unreadable stock snapshot", "offset", m.Offset, "err", err)
			continue
		}
		v.Apply(s)
	}
}

// probe asks for the topic's end every Probe; once the readers have passed the end seen at time t,
// every snapshot published before t has been applied and the View is caught up to t.
func (v *View) probe(ctx context.Context, parts []int, next []atomic.Int64) {
	type mark struct {
		at   time.Time
		ends []int64
	}
	var pending *mark
	tick := time.NewTicker(v.cfg.Probe)
	defer tick.Stop()
	for {
		if pending != nil {
			passed := true
			for i, end := range pending.ends {
				if end >= 0 && next[i].Load() < end {
					passed = false
				}
			}
			if passed && pending.at.UnixNano() > v.caughtUp.Load() {
				v.caughtUp.Store(pending.at.UnixNano())
			}
		}
		at := time.Now()
		if ends, err := v.ends(ctx, parts); err == nil {
			pending = &mark{at: at, ends: ends}
		}
		live := v.Live()
		if v.live.Swap(live) != live {
			if live {
				v.log.Info("sale pages served from the stock topic", "topic", v.cfg.Topic)
			} else {
				v.log.Warn("stock topic not caught up; the sale page reads Redis every ReadModelTTL until it is", "topic", v.cfg.Topic,
					"caught_up_at", v.CaughtUpAt())
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// ends returns, per partition, the offset a caught-up reader reads next; -1 for an empty one.
func (v *View) ends(ctx context.Context, parts []int) ([]int64, error) {
	reqs := make([]kafka.OffsetRequest, 0, 2*len(parts))
	for _, p := range parts {
		reqs = append(reqs, kafka.FirstOffsetOf(p), kafka.LastOffsetOf(p))
	}
	lctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	res, err := v.client.ListOffsets(lctx, &kafka.ListOffsetsRequest{Topics: map[string][]kafka.OffsetRequest{v.cfg.Topic: reqs}})
	if err != nil {
		return nil, err
	}
	byPart := map[int]kafka.PartitionOffsets{}
	for _, po := range res.Topics[v.cfg.Topic] {
		if po.Error != nil {
			return nil, po.Error
		}
		byPart[po.Partition] = po
	}
	out := make([]int64, len(parts))
	for i, p := range parts {
		po, ok := byPart[p]
		switch {
		case !ok:
			return nil, fmt.Errorf("stock topic partition %d: no offsets", p)
		case po.LastOffset <= po.FirstOffset:
			out[i] = -1
		default:
			out[i] = po.LastOffset
		}
	}
	return out, nil
}
