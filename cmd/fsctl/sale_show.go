package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/fsctl/fsctl/internal/checkout/saleops"
	"github.com/fsctl/fsctl/internal/platform/table"
)

func newSaleShowCmd() *cobra.Command {
	var o saleReadOptions
	cmd := &cobra.Command{
		Use:   "show --sale ID",
		Short: "Show a sale's settings and each item's numbers in PostgreSQL and Redis side by side",
		Long: `Show a sale's settings and, per item, PostgreSQL's numbers (quantity, sold, pending and paid
orders, the epoch of sale_items) beside Redis's (stock on each shard, holds, the pause flag and the
epoch each shard's meta holds). Where the two disagree a note says so and what writes both again.
It only reads; fsctl reconcile is the check that proves the stores agree order by order.`,
		Example: `  fsctl sale show --sale black-friday
  fsctl sale show --sale black-friday -o json | jq '.items[].redis.shards'`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return showSale(cmd, o) },
	}
	o.endpoints.bind(cmd.Flags(), false)
	bindSale(cmd.Flags(), &o.sale, "the sale to show (required)")
	bindOutput(cmd.Flags(), &o.output, "the sale")
	return cmd
}

func showSale(cmd *cobra.Command, o saleReadOptions) error {
	if err := checkSaleID(o.sale); err != nil {
		return err
	}
	return withSaleStores(cmd, o.endpoints, saleops.Open, func(ctx context.Context, s *saleops.Stores) error {
		v, err := s.View(ctx, o.sale)
		if err != nil {
			return err
		}
		return writeReport(cmd.OutOrStdout(), o.output, reportOf{v: v, render: func(w io.Writer) error { return renderSaleView(w, v) }})
	})
}

// renderSaleView is `fsctl sale show`'s table.
func renderSaleView(w io.Writer, v saleops.View) error {
	s := v.Sale
	closes := "never closes"
	if s.ClosesAt != nil {
		closes = "closes " + stamp(*s.ClosesAt)
	}
	fmt.Fprintf(w, "sale %s (%s): opens %s, %s, per-user limit %d, hold %s, paused: %s\n",
		s.ID, s.Name, stamp(s.OpensAt), closes, s.PerUserLimit, s.HoldTTL, yesNo(s.Paused))
	printSaleOptions(w, s.PerSaleLimit, s.Reveal)
	if s.Room != nil {
		fmt.Fprintf(w, "waiting room: admissions paused: %s, %.0f buyers/s, at most %d active\n",
			yesNo(s.Room.Paused), s.Room.AdmissionRate, s.Room.MaxActive)
	}
	// Narrow: the shards' stock wraps, then the epochs, the shards' paused flags, the holds and
	// the pending/paid split of sold go (-o json has them all).
	t := table.New(w, "item", "quantity", "pg sold", "pending", "paid", "pg epoch", "redis stock", "per shard", "holds", "redis paused", "redis epoch").
		Wrap("per shard", 0).Drop("redis epoch", "pg epoch", "redis paused", "holds", "pending", "paid")
	for _, it := range v.Items {
		p, r := it.Postgres, it.Redis
		var perShard, paused, epochs []string
		for _, sh := range r.Shards {
			if !sh.Loaded {
				perShard = append(perShard, "-")
				continue
			}
			perShard = append(perShard, strconv.FormatInt(sh.Stock+sh.InTransit, 10))
			paused = appendNew(paused, yesNo(sh.Paused))
			epochs = appendNew(epochs, strconv.FormatInt(sh.Epoch, 10))
		}
		if err := t.Append(it.Item, strconv.FormatInt(p.Quantity, 10), strconv.FormatInt(p.Sold, 10),
			strconv.FormatInt(p.Pending, 10), strconv.FormatInt(p.Paid, 10), strconv.FormatInt(p.Epoch, 10),
			strconv.FormatInt(r.Stock, 10), strings.Join(perShard, " "), strconv.FormatInt(r.Holds, 10),
			orDash(strings.Join(paused, "/")), orDash(strings.Join(epochs, "/"))); err != nil {
			return err
		}
	}
	if err := t.Render(); err != nil {
		return err
	}
	for _, n := range v.Notes {
		fmt.Fprintln(w, "note:", n)
	}
	return nil
}

// appendNew appends s unless it is already there: the distinct values of a column over shards.
func appendNew(list []string, s string) []string {
	if slices.Contains(list, s) {
		return list
	}
	return append(list, s)
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339) }
