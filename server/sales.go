package server

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"golang.org/x/sync/singleflight"

	"github.com/fsctl/fsctl/internal/checkout/readmodel"
	"github.com/fsctl/fsctl/internal/contract/outcome"
	"github.com/fsctl/fsctl/internal/contract/sale"
)

// maxCachedSales bounds the read model's memory; past it the cache starts over.
const maxCachedSales = 1024

// Where the sale page's stock numbers came from (stockSource, X-Stock-Source).
const (
	// stockFromEvents: the event-fed read model (readmodel.View).
	stockFromEvents = "events"
	// stockFromPoll: the live counters, read at most once per ReadModelTTL (--read-model poll).
	stockFromPoll = "poll"
	// stockFromFallback: the live counters, because the event-fed read model is not caught up
	// with its topic (Kafka away, or the instance still starting).
	stockFromFallback = "poll-fallback"
)

// StockView is the event-fed read model of remaining stock; *readmodel.View implements it.
type StockView interface {
	Live() bool
	Stock(saleID string, items []sale.Item) (readmodel.Stock, error)
	Seed(ctx context.Context, saleID string, items []sale.Item) error
}

// SetStockView makes the sale page take its stock numbers from v while v is live, and from the
// live counters every ReadModelTTL while it is not; call it before Serve.
func (s *Server) SetStockView(v StockView) { s.catalog.view = v }

// catalog is the read model behind GET /api/v1/sales/{sale}: the sale from PostgreSQL and its
// remaining stock from the event-fed view (when set and live) or from Redis, refreshed at most
// once per TTL however many buyers ask, so the sale page never loads the live counters during a
// burst.
type catalog struct {
	orders OrderStore
	stock  Reserver
	view   StockView
	ttl    time.Duration
	now    func() time.Time
	log    *slog.Logger

	mu      sync.Mutex
	entries map[string]catalogEntry
	group   singleflight.Group
}

type catalogEntry struct {
	sale      sale.Sale
	remaining map[string]int64
	// asOf is when the numbers were known current; version changes when they may have changed;
	// loadedAt is when the entry was refreshed. All three are the Redis read's time when polled.
	asOf, version, loadedAt time.Time
	source                  string
}

func newCatalog(o OrderStore, st Reserver, ttl time.Duration, now func() time.Time, log *slog.Logger) *catalog {
	return &catalog{orders: o, stock: st, ttl: ttl, now: now, log: log, entries: map[string]catalogEntry{}}
}

// get returns the sale's entry, its stock numbers from the view whenever it is live (memory only:
// every request sees the latest snapshot, not the one of the last refresh).
func (c *catalog) get(ctx context.Context, saleID string) (catalogEntry, error) {
	e, err := c.load(ctx, saleID)
	if err != nil || c.view == nil {
		return e, err
	}
	if o := c.overlay(e); o.source == stockFromEvents {
		return o, nil
	}
	// Live but an item has no snapshot yet: seed it (rate-limited by the view) rather than wait
	// for the entry's next refresh.
	if c.view.Live() && c.view.Seed(ctx, saleID, e.sale.Items) == nil {
		if o := c.overlay(e); o.source == stockFromEvents {
			return o, nil
		}
	}
	return e, nil
}

func (c *catalog) overlay(e catalogEntry) catalogEntry {
	if st, err := c.view.Stock(e.sale.ID, e.sale.Items); err == nil {
		e.remaining, e.asOf, e.version, e.source = st.Remaining, st.AsOf, st.ReadAt, stockFromEvents
	}
	return e
}

func (c *catalog) load(ctx context.Context, saleID string) (catalogEntry, error) {
	c.mu.Lock()
	e, ok := c.entries[saleID]
	c.mu.Unlock()
	// An entry whose numbers came from the view is not served once the view stops vouching for
	// them: it is refreshed from the live counters.
	if ok && c.now().Sub(e.loadedAt) < c.ttl && (e.source != stockFromEvents || c.view.Live()) {
		return e, nil
	}
	v, err, _ := c.group.Do(saleID, func() (any, error) { return c.refresh(context.WithoutCancel(ctx), saleID) })
	if err != nil {
		// A stale entry beats no answer: purchases keep flowing while PostgreSQL is briefly away
		// (Kafka buffers the orders), and the schedule and shard counts rarely change.
		if ok && outcome.CodeOf(err) != outcome.NotFound {
			c.log.Warn("sale read model not refreshed; serving the last one", "sale", saleID, "age", c.now().Sub(e.asOf), "err", err)
			return e, nil
		}
		return catalogEntry{}, err
	}
	return v.(catalogEntry), nil
}

// soldOut reports whether the cached read model shows every item of the sale sold out; it never
// refreshes (the waiting room asks on every poll).
func (c *catalog) soldOut(saleID string) bool {
	c.mu.Lock()
	e, ok := c.entries[saleID]
	c.mu.Unlock()
	if ok && c.view != nil {
		e = c.overlay(e)
	}
	if !ok || len(e.remaining) == 0 {
		return false
	}
	for _, n := range e.remaining {
		if n > 0 {
			return false
		}
	}
	return true
}

// forget drops a sale's entry so the next read sees an operator's change at once.
func (c *catalog) forget(saleID string) {
	c.mu.Lock()
	delete(c.entries, saleID)
	c.mu.Unlock()
}

func (c *catalog) refresh(ctx context.Context, saleID string) (catalogEntry, error) {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	sl, err := c.orders.LoadSale(ctx, saleID)
	if err != nil {
		return catalogEntry{}, err
	}
	e := catalogEntry{sale: sl, asOf: c.now(), source: stockFromPoll}
	if c.view != nil {
		if e, ok := c.fromView(ctx, e); ok {
			c.store(e)
			return e, nil
		}
		e.source = stockFromFallback
	}
	states, err := c.stock.Snapshot(ctx, saleID, sl.Items)
	c.mu.Lock()
	prev, had := c.entries[saleID]
	c.mu.Unlock()
	switch {
	case err == nil:
		e.remaining = make(map[string]int64, len(states))
		for _, st := range states {
			e.remaining[st.ItemID] = st.Stock
		}
	case had:
		// Purchases need the sale, not the counts: a Redis that answers for only some shards (a
		// cluster master down) keeps them flowing, and the page keeps the last counts it read.
		c.log.Warn("stock counts not refreshed; the sale page keeps its last ones", "sale", saleID, "err", err)
		e.remaining, e.asOf = prev.remaining, prev.asOf
	default:
		c.log.Warn("stock counts unreadable; the sale page shows none until they are", "sale", saleID, "err", err)
	}
	e.version, e.loadedAt = e.asOf, e.asOf
	c.store(e)
	return e, nil
}

// fromView fills e's numbers from the view when it is live, seeding it (one Redis read per
// instance) with the items no snapshot names yet.
func (c *catalog) fromView(ctx context.Context, e catalogEntry) (catalogEntry, bool) {
	if !c.view.Live() {
		return e, false
	}
	if err := c.view.Seed(ctx, e.sale.ID, e.sale.Items); err != nil {
		c.log.Warn("stock read model not seeded; reading the counters", "sale", e.sale.ID, "err", err)
		return e, false
	}
	e.loadedAt = c.now()
	e = c.overlay(e)
	return e, e.source == stockFromEvents
}

func (c *catalog) store(e catalogEntry) {
	c.mu.Lock()
	if len(c.entries) >= maxCachedSales {
		c.entries = map[string]catalogEntry{}
	}
	c.entries[e.sale.ID] = e
	c.mu.Unlock()
}

type saleBody struct {
	ID           string     `json:"id"`
	Name         string     `json:"name"`
	OpensAt      time.Time  `json:"opensAt"`
	ClosesAt     *time.Time `json:"closesAt,omitempty"`
	Open         bool       `json:"open"`
	Paused       bool       `json:"paused"`
	PerUserLimit int        `json:"perUserLimit"`
	// PerSaleLimit is what one buyer may hold across all the sale's items; absent: no such limit.
	PerSaleLimit int    `json:"perSaleLimit,omitempty"`
	HoldTTL      string `json:"holdTTL"`
	// Reveal says the purchase route is hidden until the opening: buyers ask GET
	// .../items/{item}/purchase-path for theirs (never on this cached page) and POST to it.
	Reveal     bool       `json:"reveal"`
	Items      []itemBody `json:"items"`
	ServerTime time.Time  `json:"serverTime"`
	StockAsOf  time.Time  `json:"stockAsOf"`
	// StockSource says where the numbers came from: events, poll or poll-fallback.
	StockSource string `json:"stockSource"`
}

type itemBody struct {
	ID         string `json:"id"`
	Name       string `json:"name"`
	Quantity   int64  `json:"quantity"`
	Remaining  int64  `json:"remaining"`
	PriceCents int64  `json:"priceCents"`
}

func (s *Server) handleGetSale(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("sale")
	if !sale.ValidSlug(id) {
		s.writeCode(w, outcome.InvalidRequest, "sale id must match [A-Za-z0-9_-]{1,64}")
		return
	}
	e, err := s.catalog.get(r.Context(), id)
	if err != nil {
		if outcome.CodeOf(err) == outcome.NotFound {
			s.writeCode(w, outcome.NotFound, "no sale "+id)
			return
		}
		s.log.Error("load sale", "sale", id, "err", err)
		s.writeCode(w, outcome.Unavailable, "sale data unavailable; retry")
		return
	}
	now := s.now().UTC()
	b := saleBody{
		ID: e.sale.ID, Name: e.sale.Name, OpensAt: e.sale.OpensAt.UTC(), Paused: e.sale.Paused,
		Open: e.sale.OpenAt(now) && !e.sale.Paused, PerUserLimit: e.sale.PerUserLimit, PerSaleLimit: e.sale.PerSaleLimit,
		HoldTTL: e.sale.HoldTTL.String(), Reveal: e.sale.Reveal.Enabled, ServerTime: now, StockAsOf: e.asOf.UTC(), StockSource: e.source,
	}
	if !e.sale.ClosesAt.IsZero() {
		c := e.sale.ClosesAt.UTC()
		b.ClosesAt = &c
	}
	for _, it := range e.sale.Items {
		b.Items = append(b.Items, itemBody{ID: it.ID, Name: it.Name, Quantity: it.Quantity, Remaining: max(e.remaining[it.ID], 0), PriceCents: it.PriceCents})
	}
	// A CDN may serve this page for a second and keep serving a stale copy while it revalidates:
	// the stock numbers are a read model anyway, never the live counter. The ETag names the
	// read-model version, so a revalidation that finds nothing new costs a 304 and no body.
	etag := fmt.Sprintf(`W/"%s-%d-%d"`, e.sale.ID, e.loadedAt.UnixMilli(), e.version.UnixMicro())
	w.Header().Set("X-Stock-Source", e.source)
	w.Header().Set("Cache-Control", fmt.Sprintf("public, max-age=%d, s-maxage=%d, stale-while-revalidate=5", cacheSeconds(s.cfg.ReadModelTTL), cacheSeconds(s.cfg.ReadModelTTL)))
	w.Header().Set("ETag", etag)
	if r.Header.Get("If-None-Match") == etag {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	writeJSON(w, http.StatusOK, b)
}

// cacheSeconds rounds the read model's TTL up to whole seconds, at least one.
func cacheSeconds(ttl time.Duration) int {
	return max(1, int((ttl+time.Second-1)/time.Second))
}
