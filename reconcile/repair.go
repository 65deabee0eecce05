package reconcile

import (
	"context"
	"errors"
	"fmt"
)

// errMoved is a compare-and-set that found the counter changed since it was read.
var errMoved = errors.New("the counter moved since it was read (a purchase or release ran): left alone")

func (r *run) fixSold(item string) func(context.Context) error {
	return func(ctx context.Context) error {
		n, err := r.t.DB.FixSold(ctx, r.cfg.SaleID, item)
		if err == nil && n == 0 {
			err = fmt.Errorf("fix.sold changed no row of item %s", item)
		}
		return err
	}
}

func (r *run) setStock(key string, from, to int64) func(context.Context) error {
	return func(ctx context.Context) error {
		ok, err := r.t.Stocks.SetStock(ctx, key, from, to)
		if err == nil && !ok {
			err = fmt.Errorf("%s no longer %d: %w", key, from, errMoved)
		}
		return err
	}
}

func (r *run) removeBuyers(key string, users []string) func(context.Context) error {
	return func(ctx context.Context) error {
		for _, u := range users {
			if err := r.t.Stocks.RemoveBuyer(ctx, key, u); err != nil {
				return err
			}
		}
		return nil
	}
}

func (r *run) addBuyers(key string, users []string) func(context.Context) error {
	return func(ctx context.Context) error {
		for _, u := range users {
			if err := r.t.Stocks.AddBuyer(ctx, key, u); err != nil {
				return err
			}
		}
		return nil
	}
}
