package main

import (
	"context"
	"fmt"
	"io"
	"strconv"

	"github.com/redis/go-redis/v9"
	"github.com/spf13/cobra"

	"github.com/fsctl/fsctl/orders"
	"github.com/fsctl/fsctl/outcome"
	"github.com/fsctl/fsctl/provision"
	"github.com/fsctl/fsctl/redisconn"
	"github.com/fsctl/fsctl/sale"
	"github.com/fsctl/fsctl/stock"
	"github.com/fsctl/fsctl/table"
)

func newSaleCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "sale",
		Short: "Set up and inspect sales",
	}
	cmd.AddCommand(newSaleCreateCmd(), newSaleListCmd(), newSaleShowCmd(), newSalePauseCmd(true), newSalePauseCmd(false))
	return cmd
}

// saleStores are the two stores a sale lives in: PostgreSQL, its source of truth, and Redis,
// where the reserve script reads it.
type saleStores struct {
	db  *orders.Store
	rdb redis.UniversalClient
	st  *stock.Store
}

// openSaleStores connects to both stores of the endpoint flags and checks Redis answers.
func openSaleStores(ctx context.Context, e endpointFlags) (*saleStores, error) {
	db, err := orders.Open(ctx, e.postgresURL)
	if err != nil {
		return nil, err
	}
	rdb, err := redisconn.Open(e.redisURL, redisconn.Tune{})
	if err != nil {
		db.Close()
		return nil, usageError(err)
	}
	if err := redisconn.Check(ctx, rdb); err != nil {
		db.Close()
		_ = rdb.Close()
		return nil, err
	}
	return &saleStores{db: db, rdb: rdb, st: stock.New(rdb)}, nil
}

// withSaleStores runs fn with both stores of the endpoint flags, closed when it returns.
func withSaleStores(cmd *cobra.Command, e endpointFlags, fn func(context.Context, *saleStores) error) error {
	ctx := cmd.Context()
	s, err := openSaleStores(ctx, e)
	if err != nil {
		return err
	}
	defer func() {
		s.db.Close()
		_ = s.rdb.Close()
	}()
	return fn(ctx, s)
}

// checkSaleID refuses a missing or malformed --sale before anything is opened.
func checkSaleID(id string) error {
	switch {
	case id == "":
		return usageError(fmt.Errorf("--sale is required (or %s); `fsctl sale list` shows the sales", envSale))
	case !sale.ValidSlug(id):
		return usageError(fmt.Errorf("--sale %q: a sale id matches [A-Za-z0-9_-]{1,64}", id))
	}
	return nil
}

// loadSale reads a sale from PostgreSQL; one that does not exist is the command line's mistake.
func (s *saleStores) loadSale(ctx context.Context, id string) (sale.Sale, error) {
	sl, err := s.db.LoadSale(ctx, id)
	if outcome.CodeOf(err) == outcome.NotFound {
		return sale.Sale{}, usageError(fmt.Errorf("no sale %s in PostgreSQL; `fsctl sale list` shows the sales there", id))
	}
	return sl, err
}

type saleCreateOptions struct {
	endpoints endpointFlags
	file      string
	reset     bool
	output    outputFlag
}

func newSaleCreateCmd() *cobra.Command {
	var o saleCreateOptions
	cmd := &cobra.Command{
		Use:   "create -f SALE.yaml",
		Short: "Write a sale to PostgreSQL and preload its stock into Redis",
		Long: `Write a sale definition to PostgreSQL (the source of truth) and preload Redis from it.

Re-running it updates the sale's settings and items. An item whose Redis stock counter already
exists keeps it (overwriting a live counter would invent or lose units) and moves it by exactly
the change in quantity ("adjusted"); a missing counter is loaded with quantity minus what
PostgreSQL counts as sold. --reset wipes the sale's orders and
Redis state first: for rehearsals only, never during a real sale.`,
		Example: `  fsctl sale create -f examples/sale.yaml
  fsctl sale create -f examples/sale.yaml --reset   # start the rehearsal over
  fsctl sale create -f examples/sale.yaml -o json | jq '.items[].stock'`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return createSale(cmd, o) },
	}
	o.endpoints.bind(cmd.Flags(), false)
	cmd.Flags().StringVarP(&o.file, "file", "f", "", "sale definition (YAML)")
	cmd.Flags().BoolVar(&o.reset, "reset", false, "delete the sale's orders and Redis state first (rehearsals only)")
	bindOutput(cmd.Flags(), &o.output, "what was written and preloaded")
	_ = cmd.MarkFlagRequired("file")
	return cmd
}

func createSale(cmd *cobra.Command, o saleCreateOptions) error {
	ctx := cmd.Context()
	sl, err := sale.LoadFile(o.file)
	if err != nil {
		return err
	}
	if o.reset {
		announceChange(o.output.beside(cmd.OutOrStdout(), cmd.ErrOrStderr()), "resetting sale "+sl.ID+" (its orders and Redis state)",
			o.endpoints.redisURL, o.endpoints.postgresURL)
	}
	if _, err := orders.Migrate(ctx, o.endpoints.postgresURL); err != nil {
		return err
	}
	return withSaleStores(cmd, o.endpoints, func(ctx context.Context, s *saleStores) error {
		rep, err := provision.Sale(ctx, s.db, s.st, sl, provision.Options{Reset: o.reset})
		if err != nil {
			return err
		}
		if o.output.json() {
			return reportOf{v: provisionJSON(sl, rep)}.WriteJSON(cmd.OutOrStdout())
		}
		if err := printProvision(cmd.OutOrStdout(), sl, rep); err != nil {
			return err
		}
		return printPlacement(ctx, cmd.OutOrStdout(), s.rdb, sl)
	})
}

// printPlacement says, on a Redis Cluster, which master holds each shard of each item, and warns
// when two shards of an item share a master while another holds none.
func printPlacement(ctx context.Context, w io.Writer, rdb redis.UniversalClient, sl sale.Sale) error {
	if _, cluster := rdb.(*redis.ClusterClient); !cluster {
		return nil
	}
	for _, it := range sl.Items {
		var keys, labels []string
		for k := range it.ShardCount() {
			keys, labels = append(keys, stock.ShardKeys(sl.ID, it.ID, k, it.ShardCount()).Stock()), append(labels, "shard "+strconv.Itoa(k))
		}
		nodes, masters, err := redisconn.Placement(ctx, rdb, keys)
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

func printProvision(w io.Writer, sl sale.Sale, rep provision.Report) error {
	fmt.Fprintf(w, "sale %s (%s): opens %s, per-user limit %d, hold %s\n",
		sl.ID, sl.Name, sl.OpensAt.UTC().Format("2006-01-02T15:04:05Z"), sl.PerUserLimit, sl.HoldTTL)
	printSaleOptions(w, sl.PerSaleLimit, revealTTL(sl.Reveal))
	t := table.New(w, "item", "quantity", "pg sold", "redis stock", "shards", "preload").Wrap("preload", 0)
	for _, it := range rep.Items {
		if err := t.Append(it.ItemID, strconv.FormatInt(it.Quantity, 10), strconv.FormatInt(it.Sold, 10),
			strconv.FormatInt(it.Stock, 10), strconv.Itoa(it.Shards), string(it.Action)); err != nil {
			return err
		}
	}
	return t.Render()
}

// provisionJSON is `sale create -o json`: the sale's settings and each item's numbers after the
// preload.
func provisionJSON(sl sale.Sale, rep provision.Report) map[string]any {
	type item struct {
		ID       string `json:"id"`
		Quantity int64  `json:"quantity"`
		Sold     int64  `json:"sold"`
		Stock    int64  `json:"stock"`
		Shards   int    `json:"shards"`
		Preload  string `json:"preload"`
	}
	items := []item{}
	for _, it := range rep.Items {
		items = append(items, item{it.ItemID, it.Quantity, it.Sold, it.Stock, it.Shards, string(it.Action)})
	}
	return map[string]any{"sale": sl.ID, "name": sl.Name, "opensAt": sl.OpensAt.UTC(), "perUserLimit": sl.PerUserLimit,
		"holdTTL": sl.HoldTTL.String(), "items": items}
}

// revealTTL is how sale create and sale show name a sale's reveal: the lifetime of a purchase
// path, "" when the sale does not reveal one.
func revealTTL(r sale.Reveal) string {
	if !r.Enabled {
		return ""
	}
	return r.TTL.String()
}

// printSaleOptions prints the lines of the sale options a sale has on (sale create, sale show): the
// per-sale limit (0: none) and the lifetime of a revealed purchase path ("": reveal off).
func printSaleOptions(w io.Writer, perSaleLimit int, reveal string) {
	if perSaleLimit > 0 {
		fmt.Fprintf(w, "per-sale limit: %d unit(s) per buyer across the items\n", perSaleLimit)
	}
	if reveal != "" {
		fmt.Fprintf(w, "purchase path revealed at the opening, each valid %s\n", reveal)
	}
}
