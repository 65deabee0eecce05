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

	"github.com/fsctl/fsctl/sale"
	"github.com/fsctl/fsctl/table"
)

type saleReadOptions struct {
	endpoints endpointFlags
	sale      string
	output    outputFlag
}

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

// saleListRow is one sale of `fsctl sale list`.
type saleListRow struct {
	saleSettings
	Items    int   `json:"items"`
	Quantity int64 `json:"quantity"`
	Sold     int64 `json:"sold"`
	// LoadedShards of Shards are loaded in Redis: all of them, or the sale answers no buyer.
	LoadedShards int `json:"loadedShards"`
	Shards       int `json:"shards"`
}

func listSales(cmd *cobra.Command, o saleReadOptions) error {
	return withSaleStores(cmd, o.endpoints, func(ctx context.Context, s *saleStores) error {
		names, err := s.db.SaleNames(ctx)
		if err != nil {
			return err
		}
		rows := make([]saleListRow, 0, len(names))
		for _, n := range names {
			v, err := s.view(ctx, n.ID)
			if err != nil {
				return err
			}
			rows = append(rows, v.listRow())
		}
		return writeReport(cmd.OutOrStdout(), o.output, reportOf{v: rows, render: func(w io.Writer) error { return renderSaleList(w, rows) }})
	})
}

func renderSaleList(w io.Writer, rows []saleListRow) error {
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

func showSale(cmd *cobra.Command, o saleReadOptions) error {
	if err := checkSaleID(o.sale); err != nil {
		return err
	}
	return withSaleStores(cmd, o.endpoints, func(ctx context.Context, s *saleStores) error {
		v, err := s.view(ctx, o.sale)
		if err != nil {
			return err
		}
		return writeReport(cmd.OutOrStdout(), o.output, reportOf{v: v, render: v.render})
	})
}

// saleView is one sale as both stores hold it: `fsctl sale show`, and a row of `fsctl sale list`.
type saleView struct {
	Sale  saleSettings `json:"sale"`
	Items []itemView   `json:"items"`
	// Notes say where PostgreSQL and Redis disagree, and what writes both again.
	Notes []string `json:"notes,omitempty"`
}

// saleSettings are a sale's settings as PostgreSQL keeps them.
type saleSettings struct {
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
	Room *roomSettings `json:"room,omitempty"`
}

type roomSettings struct {
	Paused        bool    `json:"paused"`
	AdmissionRate float64 `json:"admissionRate"`
	MaxActive     int     `json:"maxActive,omitempty"`
}

type itemView struct {
	Item     string       `json:"item"`
	Postgres itemPostgres `json:"postgres"`
	Redis    itemRedis    `json:"redis"`
}

type itemPostgres struct {
	Quantity int64 `json:"quantity"`
	Sold     int64 `json:"sold"`
	Pending  int64 `json:"pending"`
	Paid     int64 `json:"paid"`
	Epoch    int64 `json:"epoch"`
}

type itemRedis struct {
	// Stock counts the units in transit between shards too (stock.ItemState).
	Stock  int64       `json:"stock"`
	Holds  int64       `json:"holds"`
	Buyers int64       `json:"buyers"`
	Shards []shardView `json:"shards"`
}

type shardView struct {
	Shard     int   `json:"shard"`
	Loaded    bool  `json:"loaded"`
	Paused    bool  `json:"paused"`
	Epoch     int64 `json:"epoch"`
	Stock     int64 `json:"stock"`
	Holds     int64 `json:"holds"`
	Buyers    int64 `json:"buyers"`
	InTransit int64 `json:"inTransit"`
}

// view reads a sale from both stores with the readers the server and reconcile use: PostgreSQL's
// sale, counts and epochs, Redis's counters and shard metas.
func (s *saleStores) view(ctx context.Context, id string) (saleView, error) {
	sl, err := s.loadSale(ctx, id)
	if err != nil {
		return saleView{}, err
	}
	counts, err := s.db.Counts(ctx, sl.ID)
	if err != nil {
		return saleView{}, err
	}
	states, err := s.st.Snapshot(ctx, sl.ID, sl.Items)
	if err != nil {
		return saleView{}, err
	}
	metas, err := s.st.Metas(ctx, sl.ID, sl.Items)
	if err != nil {
		return saleView{}, err
	}
	v := saleView{Sale: saleSettings{ID: sl.ID, Name: sl.Name, OpensAt: sl.OpensAt, Paused: sl.Paused,
		PerUserLimit: sl.PerUserLimit, PerSaleLimit: sl.PerSaleLimit, HoldTTL: sl.HoldTTL.String(), WaitReplicas: sl.WaitReplicas,
		Reveal: revealTTL(sl.Reveal)}}
	if !sl.ClosesAt.IsZero() {
		v.Sale.ClosesAt = &sl.ClosesAt
	}
	if sl.Room.Enabled {
		v.Sale.Room = &roomSettings{Paused: sl.Room.Paused, AdmissionRate: sl.Room.AdmissionRate, MaxActive: sl.Room.MaxActive}
	}
	for i, it := range sl.Items {
		iv := itemView{Item: it.ID, Postgres: itemPostgres{Quantity: it.Quantity, Epoch: it.Epoch},
			Redis: itemRedis{Stock: states[i].Stock, Holds: states[i].Holds, Buyers: states[i].Buyers}}
		for _, c := range counts {
			if c.ItemID == it.ID {
				iv.Postgres.Sold, iv.Postgres.Pending, iv.Postgres.Paid = c.Sold, c.Pending, c.Paid
			}
		}
		for k, m := range metas[i] {
			sh := states[i].Shards[k]
			iv.Redis.Shards = append(iv.Redis.Shards, shardView{Shard: k, Loaded: m.Loaded, Paused: m.Paused, Epoch: m.Epoch,
				Stock: sh.Stock, Holds: sh.Holds, Buyers: sh.Buyers, InTransit: sh.InTransit})
		}
		v.Items = append(v.Items, iv)
		v.Notes = append(v.Notes, disagreements(sl, iv)...)
	}
	return v, nil
}

// disagreements are the notes of one item whose shards are missing, or hold another pause flag or
// epoch than PostgreSQL.
func disagreements(sl sale.Sale, iv itemView) []string {
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

func (v saleView) listRow() saleListRow {
	r := saleListRow{saleSettings: v.Sale, Items: len(v.Items)}
	for _, it := range v.Items {
		r.Quantity, r.Sold = r.Quantity+it.Postgres.Quantity, r.Sold+it.Postgres.Sold
		for _, sh := range it.Redis.Shards {
			r.Shards++
			if sh.Loaded {
				r.LoadedShards++
			}
		}
	}
	return r
}

func (v saleView) render(w io.Writer) error {
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

func loadedWord(loaded, shards int) string {
	switch loaded {
	case shards:
		return "loaded"
	case 0:
		return "not loaded"
	}
	return fmt.Sprintf("%d of %d shards", loaded, shards)
}

func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339) }
