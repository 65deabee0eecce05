package main

import (
	"context"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/fsctl/fsctl/internal/checkout/saleops"
)

// newSalePauseCmd is `fsctl sale pause` (pause true) or `fsctl sale resume`.
func newSalePauseCmd(pause bool) *cobra.Command {
	var o saleReadOptions
	verb, does := "resume", "Resume a paused sale: purchases are answered again"
	if pause {
		verb, does = "pause", "Pause a sale: every purchase is answered 503 PAUSED until it is resumed"
	}
	cmd := &cobra.Command{
		Use:   verb + " --sale ID",
		Short: does,
		Long: does + `.

The same as the server's POST /admin/v1/sales/ID/` + verb + `, without a server: the flag goes to
PostgreSQL first (sales.paused, so a later preload or rebuild keeps it), then to the meta of every
shard in Redis, which the reserve script reads on every call, so every server instance honours it
at once. When Redis cannot be written the flag is saved in PostgreSQL but not live yet: run it
again. A sale's waiting room admits on its own: its admissions pause through
PUT /admin/v1/sales/ID/room.`,
		Example: "  fsctl sale " + verb + " --sale black-friday",
		Args:    cobra.NoArgs,
		RunE:    func(cmd *cobra.Command, _ []string) error { return setSalePaused(cmd, o, pause) },
	}
	o.endpoints.bind(cmd.Flags(), false)
	bindSale(cmd.Flags(), &o.sale, "the sale to "+verb+" (required)")
	bindOutput(cmd.Flags(), &o.output, "what changed")
	return cmd
}

func setSalePaused(cmd *cobra.Command, o saleReadOptions, pause bool) error {
	if err := checkSaleID(o.sale); err != nil {
		return err
	}
	return withSaleStores(cmd, o.endpoints, saleops.Open, func(ctx context.Context, s *saleops.Stores) error {
		c, err := s.Pause(ctx, o.sale, pause)
		if err != nil {
			return err
		}
		return writeReport(cmd.OutOrStdout(), o.output, reportOf{v: c, render: func(w io.Writer) error { return renderPauseChange(w, c) }})
	})
}

func renderPauseChange(w io.Writer, c saleops.PauseChange) error {
	word := map[bool]string{true: "paused", false: "running"}
	fmt.Fprintf(w, "sale %s %s\n", c.Sale, word[c.Paused])
	fmt.Fprintf(w, "postgres: %s -> %s\n", word[c.Postgres.Before], word[c.Postgres.After])
	fmt.Fprintf(w, "redis:    %d of %d shard(s) paused -> %d of %d\n", c.Redis.PausedBefore, c.Redis.Shards, c.Redis.PausedAfter, c.Redis.Shards)
	if c.Room != "" {
		fmt.Fprintln(w, "note:", c.Room)
	}
	return nil
}
