package saleops

import (
	"context"
	"fmt"
	"io"
	"strconv"

	"github.com/redis/go-redis/v9"

	"github.com/fsctl/fsctl/internal/checkout/provision"
	"github.com/fsctl/fsctl/internal/checkout/stock"
	"github.com/fsctl/fsctl/internal/contract/sale"
	"github.com/fsctl/fsctl/internal/platform/redisconn"
)

// Create writes sl to PostgreSQL and preloads Redis from it (provision.Sale): a sale run again
// updates its settings and items, and opt.Reset wipes its orders and Redis state first.
func (s *Stores) Create(ctx context.Context, sl sale.Sale, opt provision.Options) (provision.Report, error) {
	return provision.Sale(ctx, s.Orders, s.Stock, sl, opt)
}

// WritePlacement says, on a Redis Cluster, which master holds each shard of each item, and warns
// when two shards of an item share a master while another holds none. On one Redis it writes
// nothing. Each item's line is written as soon as it is read.
func (s *Stores) WritePlacement(ctx context.Context, w io.Writer, sl sale.Sale) error {
	if _, cluster := s.redis.(*redis.ClusterClient); !cluster {
		return nil
	}
	for _, it := range sl.Items {
		var keys, labels []string
		for k := range it.ShardCount() {
			keys, labels = append(keys, stock.ShardKeys(sl.ID, it.ID, k, it.ShardCount()).Stock()), append(labels, "shard "+strconv.Itoa(k))
		}
		nodes, masters, err := redisconn.Placement(ctx, s.redis, keys)
		if err != nil {
			return err
		}
		detail, crowded := redisconn.Spread(labels, nodes, masters)
		fmt.Fprintf(w, "%s: %s\n", it.ID, detail)
		if crowded != "" {
			fmt.Fprintf(w, "warning: %s: %s; move a slot to a free master (redis-cli --cluster reshard) or use more shards\n", it.ID, crowded)
		}
	}
	return nil
}

// RevealTTL is how an operator reads a sale's reveal: the lifetime of a purchase path, "" when the
// sale does not reveal one.
func RevealTTL(r sale.Reveal) string {
	if !r.Enabled {
		return ""
	}
	return r.TTL.String()
}
