package saleops

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/fsctl/fsctl/internal/checkout/orders"
	"github.com/fsctl/fsctl/internal/checkout/stock"
	"github.com/fsctl/fsctl/internal/contract/sale"
)

// View is the operator's view of one sale as both stores hold it: `fsctl sale show` (its JSON is
// this type's), a row of `fsctl sale list`, and the admin API's GET /admin/v1/sales/{sale}, which
// words it its own way.
type View struct {
	Sale  Settings   `json:"sale"`
	Items []ItemView `json:"items"`
	// Notes say where PostgreSQL and Redis disagree, and what writes both again.
	Notes []string `json:"notes,omitempty"`
}

// Settings are a sale's settings as PostgreSQL keeps them.
type Settings struct {
	ID           string     `json:"id"`
	Name         string     `json:"name"`
	OpensAt      time.Time  `json:"opensAt"`
	ClosesAt     *time.Time `json:"closesAt,omitempty"`
	Paused       bool       `json:"paused"`
	PerUserLimit int        `json:"perUserLimit"`
	PerSaleLimit int        `json:"perSaleLimit,omitempty"`
	HoldTTL      string     `json:"holdTTL"`
	WaitReplicas int        `json:"waitReplicas,omitempty"`
	// Reveal is the lifetime of a revealed purchase path, when the sale reveals it at the opening.
	Reveal string `json:"reveal,omitempty"`
	// Room is the waiting room's settings, when the sale has one.
	Room *RoomSettings `json:"room,omitempty"`
}

// RoomSettings are a waiting room's settings as PostgreSQL keeps them.
type RoomSettings struct {
	Paused        bool    `json:"paused"`
	AdmissionRate float64 `json:"admissionRate"`
	MaxActive     int     `json:"maxActive,omitempty"`
}

// ItemView is one item's numbers in each store.
type ItemView struct {
	Item     string       `json:"item"`
	Postgres ItemPostgres `json:"postgres"`
	Redis    ItemRedis    `json:"redis"`
}

// ItemPostgres is an item as PostgreSQL counts it.
type ItemPostgres struct {
	Quantity int64 `json:"quantity"`
	Sold     int64 `json:"sold"`
	Pending  int64 `json:"pending"`
	Paid     int64 `json:"paid"`
	Epoch    int64 `json:"epoch"`
}

// ItemRedis is an item's live counters, summed over its shards and shard by shard.
type ItemRedis struct {
	// Stock counts the units in transit between shards too (stock.ItemState).
	Stock  int64       `json:"stock"`
	Holds  int64       `json:"holds"`
	Buyers int64       `json:"buyers"`
	Shards []ShardView `json:"shards"`
}

// ShardView is one shard's meta and counters.
type ShardView struct {
	Shard     int   `json:"shard"`
	Loaded    bool  `json:"loaded"`
	Paused    bool  `json:"paused"`
	Epoch     int64 `json:"epoch"`
	Stock     int64 `json:"stock"`
	Holds     int64 `json:"holds"`
	Buyers    int64 `json:"buyers"`
	InTransit int64 `json:"inTransit"`
}

// Counters reads the live counters of a sale's items: *stock.Store, or the reservation service's
// client in a server that reaches Redis through it.
type Counters interface {
	Snapshot(ctx context.Context, saleID string, items []sale.Item) ([]stock.ItemState, error)
}

// LiveView is the view of sl from its live counters alone, what the admin API reads: PostgreSQL's
// counts and epochs, the shards' metas and the notes stay empty.
func LiveView(ctx context.Context, c Counters, sl sale.Sale) (View, error) {
	states, err := c.Snapshot(ctx, sl.ID, sl.Items)
	if err != nil {
		return View{}, err
	}
	return build(sl, states, nil, nil), nil
}

// View reads a sale from both stores with the readers the server and reconcile use: PostgreSQL's
// sale, counts and epochs, Redis's counters and shard metas.
func (s *Stores) View(ctx context.Context, id string) (View, error) {
	sl, err := s.Load(ctx, id)
	if err != nil {
		return View{}, err
	}
	counts, err := s.Orders.Counts(ctx, sl.ID)
	if err != nil {
		return View{}, err
	}
	states, err := s.Stock.Snapshot(ctx, sl.ID, sl.Items)
	if err != nil {
		return View{}, err
	}
	metas, err := s.Stock.Metas(ctx, sl.ID, sl.Items)
	if err != nil {
		return View{}, err
	}
	return build(sl, states, counts, metas), nil
}

// build is the view of sl from what was read: states[i] and metas[i] are sl.Items[i]'s. Without
// metas (nil) the shards' flags stay unknown, so no note is drawn from them.
func build(sl sale.Sale, states []stock.ItemState, counts []orders.ItemCounts, metas [][]stock.ShardMeta) View {
	v := View{Sale: Settings{ID: sl.ID, Name: sl.Name, OpensAt: sl.OpensAt, Paused: sl.Paused,
		PerUserLimit: sl.PerUserLimit, PerSaleLimit: sl.PerSaleLimit, HoldTTL: sl.HoldTTL.String(), WaitReplicas: sl.WaitReplicas,
		Reveal: RevealTTL(sl.Reveal)}}
	if !sl.ClosesAt.IsZero() {
		v.Sale.ClosesAt = &sl.ClosesAt
	}
	if sl.Room.Enabled {
		v.Sale.Room = &RoomSettings{Paused: sl.Room.Paused, AdmissionRate: sl.Room.AdmissionRate, MaxActive: sl.Room.MaxActive}
	}
	for i, it := range sl.Items {
		st := states[i]
		iv := ItemView{Item: it.ID, Postgres: ItemPostgres{Quantity: it.Quantity, Epoch: it.Epoch},
			Redis: ItemRedis{Stock: st.Stock, Holds: st.Holds, Buyers: st.Buyers}}
		for _, c := range counts {
			if c.ItemID == it.ID {
				iv.Postgres.Sold, iv.Postgres.Pending, iv.Postgres.Paid = c.Sold, c.Pending, c.Paid
			}
		}
		for k, sh := range st.Shards {
			shv := ShardView{Shard: sh.Shard, Stock: sh.Stock, Holds: sh.Holds, Buyers: sh.Buyers, InTransit: sh.InTransit}
			if metas != nil && k < len(metas[i]) {
				m := metas[i][k]
				shv.Loaded, shv.Paused, shv.Epoch = m.Loaded, m.Paused, m.Epoch
			}
			iv.Redis.Shards = append(iv.Redis.Shards, shv)
		}
		v.Items = append(v.Items, iv)
		if metas != nil {
			v.Notes = append(v.Notes, disagreements(sl, iv)...)
		}
	}
	return v
}

// disagreements are the notes of one item whose shards are missing, or hold another pause flag or
// epoch than PostgreSQL.
func disagreements(sl sale.Sale, iv ItemView) []string {
	var missing, paused, epoch []string
	for _, sh := range iv.Redis.Shards {
		switch {
		case !sh.Loaded:
			missing = append(missing, strconv.Itoa(sh.Shard))
		case sh.Paused != sl.Paused:
			paused = append(paused, strconv.Itoa(sh.Shard))
		case sh.Epoch != iv.Postgres.Epoch:
			epoch = append(epoch, fmt.Sprintf("%d (epoch %d)", sh.Shard, sh.Epoch))
		}
	}
	var notes []string
	if len(missing) > 0 {
		notes = append(notes, fmt.Sprintf("%s: shard(s) %s not loaded in Redis: fsctl sale create -f loads a new sale; after Redis lost it, fsctl reconcile --sale %s --rebuild-redis",
			iv.Item, strings.Join(missing, ", "), sl.ID))
	}
	if len(paused) > 0 {
		want, verb := "running", "resume"
		if sl.Paused {
			want, verb = "paused", "pause"
		}
		notes = append(notes, fmt.Sprintf("%s: PostgreSQL says %s, Redis says otherwise on shard(s) %s: fsctl sale %s --sale %s writes both",
			iv.Item, want, strings.Join(paused, ", "), verb, sl.ID))
	}
	if len(epoch) > 0 {
		notes = append(notes, fmt.Sprintf("%s: PostgreSQL's epoch is %d, shard(s) %s hold another (a rebuild cut short, or loaded from another database): fsctl reconcile --sale %s --rebuild-redis",
			iv.Item, iv.Postgres.Epoch, strings.Join(epoch, ", "), sl.ID))
	}
	return notes
}
