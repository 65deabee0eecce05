package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/fsctl/fsctl/internal/checkout/provision"
	"github.com/fsctl/fsctl/internal/checkout/saleops"
	"github.com/fsctl/fsctl/internal/contract/sale"
	"github.com/fsctl/fsctl/internal/platform/table"
)

func newSaleCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "sale",
		Short: "Set up and inspect sales",
	}
	cmd.AddCommand(newSaleCreateCmd(), newSaleListCmd(), newSaleShowCmd(), newSalePauseCmd(true), newSalePauseCmd(false))
	return cmd
}

// storesOpener opens a sale's stores: saleops.Open, or saleops.OpenMigrated.
type storesOpener func(context.Context, saleops.Endpoints) (*saleops.Stores, error)

// withSaleStores runs fn with both stores of the endpoint flags, opened by open and closed when it
// returns. A Redis address that does not parse and a sale PostgreSQL does not hold are the command
// line's mistakes.
func withSaleStores(cmd *cobra.Command, e endpointFlags, open storesOpener, fn func(context.Context, *saleops.Stores) error) error {
	ctx := cmd.Context()
	s, err := open(ctx, saleops.Endpoints{RedisURL: e.redisURL, PostgresURL: e.postgresURL})
	if _, bad := errors.AsType[*saleops.URLError](err); bad {
		return usageError(err)
	}
	if err != nil {
		return err
	}
	defer s.Close()
	err = fn(ctx, s)
	if _, unknown := errors.AsType[*saleops.UnknownSaleError](err); unknown {
		return usageError(fmt.Errorf("%w; `fsctl sale list` shows the sales there", err))
	}
	return err
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

// saleReadOptions are the flags of sale list, show, pause and resume.
type saleReadOptions struct {
	endpoints endpointFlags
	sale      string
	output    outputFlag
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
Redis state first: for rehearsals only, never during a real sale, and only once every order of
the last rehearsal is in PostgreSQL (fsctl reconcile --sale ID reports the group's lag 0): an order
still on its way through Kafka would land in the reset sale, holding a unit and its buyer's slot
there, and PostgreSQL would refuse the new orders it collides with.`,
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
	sl, err := sale.LoadFile(o.file)
	if err != nil {
		return err
	}
	if o.reset {
		announceChange(o.output.beside(cmd.OutOrStdout(), cmd.ErrOrStderr()), "resetting sale "+sl.ID+" (its orders and Redis state)",
			o.endpoints.redisURL, o.endpoints.postgresURL)
	}
	return withSaleStores(cmd, o.endpoints, saleops.OpenMigrated, func(ctx context.Context, s *saleops.Stores) error {
		rep, err := s.Create(ctx, sl, provision.Options{Reset: o.reset})
		if err != nil {
			return err
		}
		if o.output.json() {
			return reportOf{v: provisionJSON(sl, rep)}.WriteJSON(cmd.OutOrStdout())
		}
		if err := printProvision(cmd.OutOrStdout(), sl, rep); err != nil {
			return err
		}
		return s.WritePlacement(ctx, cmd.OutOrStdout(), sl)
	})
}

func printProvision(w io.Writer, sl sale.Sale, rep provision.Report) error {
	fmt.Fprintf(w, "sale %s (%s): opens %s, per-user limit %d, hold %s\n",
		sl.ID, sl.Name, sl.OpensAt.UTC().Format("2006-01-02T15:04:05Z"), sl.PerUserLimit, sl.HoldTTL)
	printSaleOptions(w, sl.PerSaleLimit, saleops.RevealTTL(sl.Reveal))
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
