package server

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/fsctl/fsctl/internal/checkout/saleops"
	"github.com/fsctl/fsctl/internal/checkout/stock"
	"github.com/fsctl/fsctl/internal/contract/sale"
)

// snapshot is a saleops.Counters answering the counters it holds.
type snapshot []stock.ItemState

func (s snapshot) Snapshot(context.Context, string, []sale.Item) ([]stock.ItemState, error) {
	return s, nil
}

// TestAdminSaleBody holds GET /admin/v1/sales/{sale} to the field names its clients read, built
// from the operator's view the CLI's sale show renders.
func TestAdminSaleBody(t *testing.T) {
	opens := time.Date(2026, 11, 27, 9, 0, 0, 0, time.UTC)
	states := snapshot{
		{ItemID: "hot", Stock: 3, Holds: 1, Buyers: 2, Shards: []stock.ShardState{
			{Shard: 0, Stock: 2, Holds: 1, Buyers: 1}, {Shard: 1, Buyers: 1, InTransit: 1}}},
		{ItemID: "cold", Stock: 3, Shards: []stock.ShardState{{Shard: 0, Stock: 3}}},
	}
	items := []sale.Item{{ID: "hot", Quantity: 5, Shards: 2}, {ID: "cold", Quantity: 3}}
	for name, tc := range map[string]struct {
		sl   sale.Sale
		want string
	}{
		"every field": {
			sale.Sale{ID: "bf", Name: "Black Friday", OpensAt: opens, ClosesAt: opens.Add(time.Hour), Paused: true, PerUserLimit: 1,
				HoldTTL: 10 * time.Minute, WaitReplicas: 1, Items: items},
			`{"id":"bf","opensAt":"2026-11-27T09:00:00Z","closesAt":"2026-11-27T10:00:00Z","paused":true,"perUserLimit":1,` +
				`"holdTTL":"10m0s","waitReplicas":1,"switches":{"payment":true},"items":[` +
				`{"id":"hot","quantity":5,"remaining":3,"holds":1,"buyers":2,"shards":[` +
				`{"shard":0,"stock":2,"holds":1,"buyers":1,"inTransit":0},{"shard":1,"stock":0,"holds":0,"buyers":1,"inTransit":1}]},` +
				`{"id":"cold","quantity":3,"remaining":3,"holds":0,"buyers":0,"shards":[{"shard":0,"stock":3,"holds":0,"buyers":0,"inTransit":0}]}]}`,
		},
		"the optional ones left out": {
			sale.Sale{ID: "bf", OpensAt: opens, PerUserLimit: 2, HoldTTL: time.Minute, Items: items[1:]},
			`{"id":"bf","opensAt":"2026-11-27T09:00:00Z","paused":false,"perUserLimit":2,"holdTTL":"1m0s","switches":{"payment":true},"items":[` +
				`{"id":"cold","quantity":3,"remaining":3,"holds":0,"buyers":0,"shards":[{"shard":0,"stock":3,"holds":0,"buyers":0,"inTransit":0}]}]}`,
		},
	} {
		t.Run(name, func(t *testing.T) {
			v, err := saleops.LiveView(context.Background(), states[len(states)-len(tc.sl.Items):], tc.sl)
			if err != nil {
				t.Fatal(err)
			}
			b := adminSaleBodyOf(v)
			b.Switches = map[string]bool{"payment": true}
			got, err := json.Marshal(b)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tc.want {
				t.Errorf("body\n%s\nwant\n%s", got, tc.want)
			}
		})
	}
}
