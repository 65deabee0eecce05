// Package orders is fsctl's PostgreSQL order store, the source of truth behind the Redis reserve: it
// migrates the schema, saves sale definitions, places batches of reserved orders idempotently, moves
// them through payment, cancel and expiry, and answers the counts the harness checks its invariants
// against.
package orders

import (
	"context"
	"fmt"
	"net"
	"strconv"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/fsctl/fsctl/internal/platform/reach"
)

// Store is the order store over a pgx connection pool.
type Store struct {
	pool *pgxpool.Pool
}

// Open connects to the PostgreSQL database at url (a postgres:// URL or key=value DSN) and pings it,
// so a wrong address fails here, naming the address, rather than on the first order.
func Open(ctx context.Context, url string) (*Store, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("postgres url: %w", err)
	}
	return OpenConfig(ctx, cfg)
}

// OpenConfig is Open for a caller that tunes the pool (its size, for example) before connecting.
func OpenConfig(ctx context.Context, cfg *pgxpool.Config) (*Store, error) {
	addr := address(cfg.ConnConfig.Host, cfg.ConnConfig.Port, cfg.ConnConfig.Database)
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("postgres %s: %w", addr, err)
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, reach.Unreachable("postgres", addr, err)
	}
	return &Store{pool: pool}, nil
}

// On is the order store over a pool the caller opened and closes (a target's, read through its
// profile).
func On(pool *pgxpool.Pool) *Store { return &Store{pool: pool} }

// Close closes the pool; it waits for connections in use to be released.
func (s *Store) Close() { s.pool.Close() }

// Pool returns the underlying pool, for callers that run their own queries (reconcile, preflight).
func (s *Store) Pool() *pgxpool.Pool { return s.pool }

// address names a server the way an operator would type it, for error messages.
func address(host string, port uint16, db string) string {
	return net.JoinHostPort(host, strconv.Itoa(int(port))) + "/" + db
}
