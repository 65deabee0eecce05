package saleops

import "context"

// ListRow is one sale of `fsctl sale list`: its settings and its items summed.
type ListRow struct {
	Settings
	Items    int   `json:"items"`
	Quantity int64 `json:"quantity"`
	Sold     int64 `json:"sold"`
	// LoadedShards of Shards are loaded in Redis: all of them, or the sale answers no buyer.
	LoadedShards int `json:"loadedShards"`
	Shards       int `json:"shards"`
}

// List is every sale PostgreSQL holds, ended ones included, in the order of their ids, each read
// from both stores as View reads it.
func (s *Stores) List(ctx context.Context) ([]ListRow, error) {
	names, err := s.Orders.SaleNames(ctx)
	if err != nil {
		return nil, err
	}
	rows := make([]ListRow, 0, len(names))
	for _, n := range names {
		v, err := s.View(ctx, n.ID)
		if err != nil {
			return nil, err
		}
		rows = append(rows, v.ListRow())
	}
	return rows, nil
}

// ListRow sums the view's items into its row of the list.
func (v View) ListRow() ListRow {
	r := ListRow{Settings: v.Sale, Items: len(v.Items)}
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
