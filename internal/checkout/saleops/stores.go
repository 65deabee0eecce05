// Package saleops is what an operator does to a sale across its two stores: create it, list and
// show it as PostgreSQL and Redis hold it, pause and resume it. The CLI's `fsctl sale` commands and
// the server's admin API both call it, so each procedure and the operator's view exist once.
package saleops

import (
	"context"
	"fmt"

	"github.com/redis/go-redis/v9"

	"github.com/fsctl/fsctl/internal/checkout/orders"
	"github.com/fsctl/fsctl/internal/checkout/stock"
	"github.com/fsctl/fsctl/internal/contract/outcome"
	"github.com/fsctl/fsctl/internal/contract/sale"
	"github.com/fsctl/fsctl/internal/platform/redisconn"
)

// Endpoints are the addresses of a sale's two stores.
type Endpoints struct {
	// RedisURL is a redisconn address: redis://, rediss:// or redis+cluster://.
	RedisURL string
	// PostgresURL is PostgreSQL's URL.
	PostgresURL string
}

// Stores are the two stores a sale lives in: PostgreSQL, its source of truth, and Redis, where
// the reserve script reads it.
type Stores struct {
	Orders *orders.Store
	Stock  *stock.Store
	redis  redis.UniversalClient
}

// URLError is a store address that does not parse: the caller's mistake, and nothing was reached
// through it.
type URLError struct{ Err error }

func (e *URLError) Error() string { return e.Err.Error() }
func (e *URLError) Unwrap() error { return e.Err }

// UnknownSaleError is a sale id PostgreSQL does not hold.
type UnknownSaleError struct {
	ID string
	// Err is the store's own answer, an outcome.NotFound.
	Err error
}

func (e *UnknownSaleError) Error() string { return fmt.Sprintf("no sale %s in PostgreSQL", e.ID) }
func (e *UnknownSaleError) Unwrap() error { return e.Err }

// Open connects to PostgreSQL, then Redis, and checks Redis answers as the address says it is (one
// node or a cluster). A Redis address that does not parse is a *URLError.
func Open(ctx context.Context, e Endpoints) (*Stores, error) {
	db, err := orders.Open(ctx, e.PostgresURL)
	if err != nil {
		return nil, err
	}
	rdb, err := redisconn.Open(e.RedisURL, redisconn.Tune{})
	if err != nil {
		db.Close()
		return nil, &URLError{Err: err}
	}
	if err := redisconn.Check(ctx, rdb); err != nil {
		db.Close()
		_ = rdb.Close()
		return nil, err
	}
	return &Stores{Orders: db, Stock: stock.New(rdb), redis: rdb}, nil
}

// OpenMigrated is Open after bringing PostgreSQL's schema up to date: creating a sale is often the
// first thing done to a new database.
func OpenMigrated(ctx context.Context, e Endpoints) (*Stores, error) {
	if _, err := orders.Migrate(ctx, e.PostgresURL); err != nil {
		return nil, err
	}
	return Open(ctx, e)
}

// Close closes both stores.
func (s *Stores) Close() {
	s.Orders.Close()
	_ = s.redis.Close()
}

// Load reads a sale from PostgreSQL; one it does not hold is an *UnknownSaleError.
func (s *Stores) Load(ctx context.Context, id string) (sale.Sale, error) {
	sl, err := s.Orders.LoadSale(ctx, id)
	if outcome.CodeOf(err) == outcome.NotFound {
		return sale.Sale{}, &UnknownSaleError{ID: id, Err: err}
	}
	return sl, err
}
