package orders

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/fsctl/fsctl/internal/platform/reach"
	"github.com/fsctl/fsctl/migrations"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/lock"
)

// MigrationState is where a database stands against the migrations built into this binary.
type MigrationState struct {
	// Current is the newest version applied to the database (0 for an empty one).
	Current int64
	// Latest is the newest version this binary carries.
	Latest int64
}

// UpToDate reports whether every migration this binary carries is applied.
func (m MigrationState) UpToDate() bool { return m.Current >= m.Latest }

// MigrateResult is what Migrate did: the versions it applied now (none when already up to date)
// and where the database stands afterwards.
type MigrateResult struct {
	MigrationState
	Applied []int64
}

// Migrate applies every pending migration to the database at url. Running it again is a no-op, and
// concurrent runs are serialised by a PostgreSQL advisory lock.
func Migrate(ctx context.Context, url string) (MigrateResult, error) {
	var res MigrateResult
	err := withProvider(ctx, url, func(p *goose.Provider) error {
		results, err := p.Up(ctx)
		if err != nil {
			return fmt.Errorf("apply migrations: %w", err)
		}
		for _, r := range results {
			res.Applied = append(res.Applied, r.Source.Version)
		}
		res.MigrationState, err = state(ctx, p)
		return err
	})
	return res, err
}

// MigrationStatus reports the database's current version and the latest one this binary carries,
// without changing anything.
func MigrationStatus(ctx context.Context, url string) (MigrationState, error) {
	var st MigrationState
	err := withProvider(ctx, url, func(p *goose.Provider) error {
		var err error
		st, err = state(ctx, p)
		return err
	})
	return st, err
}

func state(ctx context.Context, p *goose.Provider) (MigrationState, error) {
	current, latest, err := p.GetVersions(ctx)
	if err != nil {
		return MigrationState{}, fmt.Errorf("read migration version: %w", err)
	}
	return MigrationState{Current: current, Latest: latest}, nil
}

// withProvider opens a database/sql handle (goose's interface) for one migration task.
func withProvider(ctx context.Context, url string, fn func(*goose.Provider) error) error {
	cfg, err := pgx.ParseConfig(url)
	if err != nil {
		return fmt.Errorf("postgres url: %w", err)
	}
	addr := address(cfg.Host, cfg.Port, cfg.Database)
	db := stdlib.OpenDB(*cfg)
	defer db.Close()
	if err := db.PingContext(ctx); err != nil {
		return reach.Unreachable("postgres", addr, err)
	}
	p, err := newProvider(db)
	if err != nil {
		return err
	}
	if err := fn(p); err != nil {
		return fmt.Errorf("postgres %s: %w", addr, err)
	}
	return nil
}

func newProvider(db *sql.DB) (*goose.Provider, error) {
	locker, err := lock.NewPostgresSessionLocker()
	if err != nil {
		return nil, fmt.Errorf("migration lock: %w", err)
	}
	p, err := goose.NewProvider(goose.DialectPostgres, db, migrations.FS, goose.WithSessionLocker(locker))
	if err != nil {
		return nil, fmt.Errorf("load migrations: %w", err)
	}
	return p, nil
}
