package profile

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"

	"github.com/fsctl/fsctl/internal/platform/reach"
	"github.com/fsctl/fsctl/internal/platform/redisconn"
)

// Target reads one checkout through its profile: its PostgreSQL through the profile's queries
// and its Redis through the key templates.
type Target struct {
	P      *Profile
	DB     *DB
	Stocks *Stocks

	pool *pgxpool.Pool
	rdb  redis.UniversalClient
}

// Connect opens the target's PostgreSQL and Redis.
func Connect(ctx context.Context, p *Profile, redisURL, postgresURL string) (*Target, error) {
	raddr, err := redisconn.Parse(redisURL)
	if err != nil {
		return nil, err
	}
	pool, err := pgxpool.New(ctx, postgresURL)
	if err != nil {
		return nil, fmt.Errorf("postgres url: %w", err)
	}
	rdb := raddr.Open(redisconn.Tune{})
	return &Target{P: p, DB: NewDB(p, pool), Stocks: NewStocks(p, rdb), pool: pool, rdb: rdb}, nil
}

// Close closes what Connect opened.
func (t *Target) Close() {
	if t.pool != nil {
		t.pool.Close()
	}
	if t.rdb != nil {
		_ = t.rdb.Close()
	}
}

// Ping reaches both stores within timeout, and says which one it could not reach.
func (t *Target) Ping(ctx context.Context, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if err := redisconn.Check(ctx, t.rdb); err != nil {
		return err
	}
	return t.pingPostgres(ctx)
}

// pingPostgres reaches the target's PostgreSQL; its error names the address once.
func (t *Target) pingPostgres(ctx context.Context) error {
	if err := t.pool.Ping(ctx); err != nil {
		c := t.pool.Config().ConnConfig
		return reach.Unreachable("postgres", net.JoinHostPort(c.Host, strconv.Itoa(int(c.Port)))+"/"+c.Database, err)
	}
	return nil
}

// Redis is the target's Redis client.
func (t *Target) Redis() redis.UniversalClient { return t.rdb }

// Pool is the target's PostgreSQL pool.
func (t *Target) Pool() *pgxpool.Pool { return t.pool }

// ItemState is one item as both stores see it.
type ItemState struct {
	Item string
	ItemRow
	// Live and Paid count the item's orders; HasPaid is false when the profile has no paid query.
	Live, Paid int64
	HasPaid    bool
	Shards     int
	Inventory
}

// State reads one item: its row and order counts from PostgreSQL, then its keys from Redis.
func (t *Target) State(ctx context.Context, sale, item string) (ItemState, error) {
	st := ItemState{Item: item}
	var err error
	if st.ItemRow, err = t.DB.Item(ctx, sale, item); err != nil {
		return st, err
	}
	if st.Shards, err = t.DB.Shards(ctx, sale, item); err != nil {
		return st, err
	}
	if st.Live, err = t.DB.Live(ctx, sale, item); err != nil {
		return st, err
	}
	if st.Paid, st.HasPaid, err = t.DB.Paid(ctx, sale, item); err != nil {
		return st, err
	}
	st.Inventory, err = t.Stocks.Inventory(ctx, sale, item, st.Shards)
	return st, err
}

// Items resolves which items to read: the given ones, or every item the items query returns.
func (t *Target) Items(ctx context.Context, sale string, given []string) ([]string, error) {
	if len(given) > 0 {
		return given, nil
	}
	items, err := t.DB.Items(ctx, sale)
	if err == nil && len(items) == 0 {
		err = errors.New("sql.items returned no item: is the sale right?")
	}
	return items, err
}
