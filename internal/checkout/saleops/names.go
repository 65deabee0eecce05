package saleops

import (
	"context"

	"github.com/fsctl/fsctl/internal/checkout/orders"
)

// Name is a sale or an item as a shell completion offers it: its id and its name.
type Name struct{ ID, Name string }

// SaleNames is every sale the PostgreSQL at postgresURL holds, ended ones included, in the order
// of their ids. It opens PostgreSQL alone (a completion must not need Redis) and closes it before
// it returns; ctx bounds the whole look-up.
func SaleNames(ctx context.Context, postgresURL string) ([]Name, error) {
	db, err := orders.Open(ctx, postgresURL)
	if err != nil {
		return nil, err
	}
	defer db.Close()
	names, err := db.SaleNames(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]Name, 0, len(names))
	for _, n := range names {
		out = append(out, Name{ID: n.ID, Name: n.Name})
	}
	return out, nil
}

// ItemNames is the items of sale saleID in the PostgreSQL at postgresURL, in the sale's order,
// opened and closed as SaleNames does.
func ItemNames(ctx context.Context, postgresURL, saleID string) ([]Name, error) {
	db, err := orders.Open(ctx, postgresURL)
	if err != nil {
		return nil, err
	}
	defer db.Close()
	sl, err := db.LoadSale(ctx, saleID)
	if err != nil {
		return nil, err
	}
	out := make([]Name, 0, len(sl.Items))
	for _, it := range sl.Items {
		out = append(out, Name{ID: it.ID, Name: it.Name})
	}
	return out, nil
}
