package main

import (
	"context"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/fsctl/fsctl/sale"
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

// pauseChange is what `fsctl sale pause|resume` changed, in each store.
type pauseChange struct {
	Sale     string      `json:"sale"`
	Paused   bool        `json:"paused"`
	Postgres pauseBefore `json:"postgres"`
	Redis    shardsPause `json:"redis"`
	// Room says the waiting room, when the sale has one, admits as before.
	Room string `json:"room,omitempty"`
}

type pauseBefore struct {
	Before bool `json:"before"`
	After  bool `json:"after"`
}

// shardsPause counts the shards whose meta holds the pause flag, of all the sale's shards.
type shardsPause struct {
	Shards       int `json:"shards"`
	PausedBefore int `json:"pausedBefore"`
	PausedAfter  int `json:"pausedAfter"`
}

func setSalePaused(cmd *cobra.Command, o saleReadOptions, pause bool) error {
	if err := checkSaleID(o.sale); err != nil {
		return err
	}
	return withSaleStores(cmd, o.endpoints, func(ctx context.Context, s *saleStores) error {
		c, err := s.setPaused(ctx, o.sale, pause)
		if err != nil {
			return err
		}
		return writeReport(cmd.OutOrStdout(), o.output, reportOf{v: c, render: c.render})
	})
}

// setPaused writes the pause flag to PostgreSQL, then Redis, and says what each held before and after.
func (s *saleStores) setPaused(ctx context.Context, id string, pause bool) (pauseChange, error) {
	sl, err := s.loadSale(ctx, id)
	if err != nil {
		return pauseChange{}, err
	}
	c := pauseChange{Sale: sl.ID, Paused: pause, Postgres: pauseBefore{Before: sl.Paused, After: pause}}
	if c.Redis.Shards, c.Redis.PausedBefore, err = s.pausedShards(ctx, sl); err != nil {
		return c, err
	}
	// PostgreSQL first, as the admin API does: it is what a preload or a rebuild reloads Redis
	// from, so a pause saved there is never undone by a reload, even if Redis is not written.
	if err := s.db.SetPaused(ctx, sl.ID, pause); err != nil {
		return c, fmt.Errorf("nothing changed: %w", err)
	}
	if err := s.st.SetPaused(ctx, sl, pause); err != nil {
		return c, fmt.Errorf("saved in PostgreSQL but not live in Redis yet, run it again: %w", err)
	}
	if _, c.Redis.PausedAfter, err = s.pausedShards(ctx, sl); err != nil {
		return c, err
	}
	if sl.Room.Enabled {
		c.Room = fmt.Sprintf("the waiting room admits as before (admissions paused: %s); PUT /admin/v1/sales/%s/room {\"paused\": %v} changes that",
			yesNo(sl.Room.Paused), sl.ID, pause)
	}
	return c, nil
}

// pausedShards counts the sale's shards and those whose meta holds the pause flag.
func (s *saleStores) pausedShards(ctx context.Context, sl sale.Sale) (shards, paused int, err error) {
	metas, err := s.st.Metas(ctx, sl.ID, sl.Items)
	if err != nil {
		return 0, 0, err
	}
	for _, item := range metas {
		for _, m := range item {
			shards++
			if m.Paused {
				paused++
			}
		}
	}
	return shards, paused, nil
}

func (c pauseChange) render(w io.Writer) error {
	word := map[bool]string{true: "paused", false: "running"}
	fmt.Fprintf(w, "sale %s %s\n", c.Sale, word[c.Paused])
	fmt.Fprintf(w, "postgres: %s -> %s\n", word[c.Postgres.Before], word[c.Postgres.After])
	fmt.Fprintf(w, "redis:    %d of %d shard(s) paused -> %d of %d\n", c.Redis.PausedBefore, c.Redis.Shards, c.Redis.PausedAfter, c.Redis.Shards)
	if c.Room != "" {
		fmt.Fprintln(w, "note:", c.Room)
	}
	return nil
}
