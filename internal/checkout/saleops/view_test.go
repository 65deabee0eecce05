package saleops

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/x/exp/golden"

	"github.com/fsctl/fsctl/internal/checkout/orders"
	"github.com/fsctl/fsctl/internal/checkout/stock"
	"github.com/fsctl/fsctl/internal/contract/sale"
)

// read is what the view of a sale is built from: what Stores.View reads from both stores.
type read struct {
	sl     sale.Sale
	states []stock.ItemState
	counts []orders.ItemCounts
	metas  [][]stock.ShardMeta
}

// fixture is sale bf with every option on: item hot over 2 shards (2 units sold, one in transit
// from shard 1, shard 1 paused while PostgreSQL says running) and item cold, not loaded in Redis.
func fixture() read {
	opens := time.Date(2026, 11, 27, 9, 0, 0, 0, time.UTC)
	sl := sale.Sale{ID: "bf", Name: "Black Friday", OpensAt: opens, ClosesAt: opens.Add(time.Hour), PerUserLimit: 1,
		PerSaleLimit: 2, HoldTTL: 10 * time.Minute, WaitReplicas: 1,
		Room:   sale.Room{Enabled: true, AdmissionRate: 50, MaxActive: 100},
		Reveal: sale.Reveal{Enabled: true, TTL: 30 * time.Second},
		Items:  []sale.Item{{ID: "hot", Quantity: 5, Shards: 2, Epoch: 3}, {ID: "cold", Quantity: 3, Epoch: 3}}}
	return read{sl: sl,
		states: []stock.ItemState{
			{ItemID: "hot", Stock: 3, Holds: 1, Buyers: 2, Shards: []stock.ShardState{
				{Shard: 0, Stock: 2, Holds: 1, Buyers: 1}, {Shard: 1, Stock: 0, Holds: 0, Buyers: 1, InTransit: 1}}},
			{ItemID: "cold", Shards: []stock.ShardState{{Shard: 0}}},
		},
		counts: []orders.ItemCounts{{ItemID: "hot", Quantity: 5, Sold: 2, Pending: 1, Paid: 1}, {ItemID: "cold", Quantity: 3}},
		metas: [][]stock.ShardMeta{
			{{Shard: 0, Loaded: true, Epoch: 3}, {Shard: 1, Loaded: true, Paused: true, Epoch: 3}},
			{{Shard: 0}},
		},
	}
}

func (r read) view() View { return build(r.sl, r.states, r.counts, r.metas) }

// TestViewJSON holds `fsctl sale show -o json` to its field names, which scripts read.
// Regenerate with: go test ./saleops -run TestViewJSON -update
func TestViewJSON(t *testing.T) {
	b, err := json.MarshalIndent(fixture().view(), "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	golden.RequireEqual(t, append(b, '\n'))
}

func TestViewNotes(t *testing.T) {
	for name, tc := range map[string]struct {
		change func(*read)
		want   []string
	}{
		"the stores agree": {func(r *read) {
			r.metas[0][1].Paused = false
			r.metas[1][0] = stock.ShardMeta{Loaded: true, Epoch: 3}
		}, nil},
		"a shard not loaded, another not paused": {func(*read) {}, []string{
			"hot: PostgreSQL says running, Redis says otherwise on shard(s) 1: fsctl sale resume --sale bf writes both",
			"cold: shard(s) 0 not loaded in Redis: fsctl sale create -f loads a new sale; after Redis lost it, fsctl reconcile --sale bf --rebuild-redis",
		}},
		"a paused sale a shard runs": {func(r *read) {
			r.sl.Paused = true
			r.metas[1][0] = stock.ShardMeta{Loaded: true, Paused: true, Epoch: 3}
		}, []string{"hot: PostgreSQL says paused, Redis says otherwise on shard(s) 0: fsctl sale pause --sale bf writes both"}},
		"another epoch": {func(r *read) {
			r.metas[0][1] = stock.ShardMeta{Shard: 1, Loaded: true, Epoch: 2}
			r.metas[1][0] = stock.ShardMeta{Loaded: true, Epoch: 3}
		}, []string{"hot: PostgreSQL's epoch is 3, shard(s) 1 (epoch 2) hold another (a rebuild cut short, or loaded from another database): fsctl reconcile --sale bf --rebuild-redis"}},
	} {
		t.Run(name, func(t *testing.T) {
			r := fixture()
			tc.change(&r)
			if got := r.view().Notes; !slices.Equal(got, tc.want) {
				t.Errorf("notes\n%q\nwant\n%q", got, tc.want)
			}
		})
	}
}

// counters are a Counters that answers what it holds.
type counters struct {
	states []stock.ItemState
	err    error
}

func (c counters) Snapshot(context.Context, string, []sale.Item) ([]stock.ItemState, error) {
	return c.states, c.err
}

// TestLiveView: the admin API's view has the live counters of View and nothing it did not read.
func TestLiveView(t *testing.T) {
	r := fixture()
	live, err := LiveView(context.Background(), counters{states: r.states}, r.sl)
	if err != nil {
		t.Fatal(err)
	}
	full := r.view()
	if a, b := jsonOf(t, live.Sale), jsonOf(t, full.Sale); a != b {
		t.Errorf("settings %s, want %s", a, b)
	}
	if len(live.Notes) != 0 {
		t.Errorf("notes from metas never read: %q", live.Notes)
	}
	for i, it := range live.Items {
		want := full.Items[i]
		if it.Item != want.Item || it.Postgres != (ItemPostgres{Quantity: want.Postgres.Quantity, Epoch: want.Postgres.Epoch}) ||
			it.Redis.Stock != want.Redis.Stock || it.Redis.Holds != want.Redis.Holds || it.Redis.Buyers != want.Redis.Buyers {
			t.Errorf("item %d: %+v, want the counters of %+v", i, it, want)
		}
		for k, sh := range it.Redis.Shards {
			w := want.Redis.Shards[k]
			w.Loaded, w.Paused, w.Epoch = false, false, 0
			if sh != w {
				t.Errorf("item %s shard %d: %+v, want %+v", it.Item, k, sh, w)
			}
		}
	}
	boom := errors.New("redis down")
	if _, err := LiveView(context.Background(), counters{err: boom}, r.sl); !errors.Is(err, boom) {
		t.Errorf("a failed snapshot: %v", err)
	}
}

func jsonOf(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestListRow(t *testing.T) {
	got := fixture().view().ListRow()
	if got.ID != "bf" || got.Items != 2 || got.Quantity != 8 || got.Sold != 2 || got.Shards != 3 || got.LoadedShards != 2 {
		t.Errorf("list row %+v", got)
	}
	// The row's settings are the view's, inline: `fsctl sale list -o json | jq -r '.[].id'`.
	if b := jsonOf(t, got); !strings.HasPrefix(b, `{"id":"bf","name":"Black Friday",`) || !strings.HasSuffix(b, `"items":2,"quantity":8,"sold":2,"loadedShards":2,"shards":3}`) {
		t.Errorf("list row JSON %s", b)
	}
}
