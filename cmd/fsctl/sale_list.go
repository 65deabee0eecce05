package main

import (
	"context"
	"fmt"
	"io"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/fsctl/fsctl/internal/checkout/saleops"
	"github.com/fsctl/fsctl/internal/platform/table"
)

func newSaleListCmd() *cobra.Command {
	var o saleReadOptions
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List every sale in PostgreSQL and whether Redis has it loaded",
		Long: `List every sale PostgreSQL holds, ended ones included: its window, the pause flag PostgreSQL
keeps, its items with their quantity and sold units summed, and whether Redis has every shard of
every item loaded (a sale Redis does not have answers no buyer: load it with fsctl sale create, or
rebuild it with fsctl reconcile --rebuild-redis after Redis lost it).`,
		Example: `  fsctl sale list
  fsctl sale list -o json | jq -r '.[].id'`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return listSales(cmd, o) },
	}
	o.endpoints.bind(cmd.Flags(), false)
	bindOutput(cmd.Flags(), &o.output, "the sales")
	return cmd
}

func listSales(cmd *cobra.Command, o saleReadOptions) error {
	return withSaleStores(cmd, o.endpoints, saleops.Open, func(ctx context.Context, s *saleops.Stores) error {
		rows, err := s.List(ctx)
		if err != nil {
			return err
		}
		return writeReport(cmd.OutOrStdout(), o.output, reportOf{v: rows, render: func(w io.Writer) error { return renderSaleList(w, rows) }})
	})
}

func renderSaleList(w io.Writer, rows []saleops.ListRow) error {
	if len(rows) == 0 {
		_, err := fmt.Fprintln(w, "no sales in PostgreSQL; create one with fsctl sale create -f sale.yaml")
		return err
	}
	// Narrow: the name wraps, then the closing time, the item count and the paused flag go (sale
	// show has them all).
	t := table.New(w, "id", "name", "opens", "closes", "paused", "items", "quantity", "sold", "redis").
		Wrap("name", 0).Drop("closes", "items", "paused")
	for _, r := range rows {
		closes := "never"
		if r.ClosesAt != nil {
			closes = stamp(*r.ClosesAt)
		}
		if err := t.Append(r.ID, r.Name, stamp(r.OpensAt), closes, yesNo(r.Paused), strconv.Itoa(r.Items),
			strconv.FormatInt(r.Quantity, 10), strconv.FormatInt(r.Sold, 10), loadedWord(r.LoadedShards, r.Shards)); err != nil {
			return err
		}
	}
	return t.Render()
}

func loadedWord(loaded, shards int) string {
	switch loaded {
	case shards:
		return "loaded"
	case 0:
		return "not loaded"
	}
	return fmt.Sprintf("%d of %d shards", loaded, shards)
}
