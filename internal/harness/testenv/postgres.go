package testenv

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/fsctl/fsctl/internal/harness/stack"
	"github.com/fsctl/fsctl/internal/platform/reach"
)

// Postgres creates an empty database (fsctl_t_<random hex>) on the server of FSCTL_POSTGRES_URL and
// returns its URL; the database is dropped, with any connections still open, when the test ends.
// The caller runs its own migrations, so each test starts from a known schema.
func Postgres(tb testing.TB) string {
	tb.Helper()
	skipShort(tb)
	serverURL := stack.EndpointsFromEnv().PostgresURL
	u, err := url.Parse(serverURL)
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
		tb.Fatalf("%s must be a postgres:// URL, got %q", stack.EnvPostgresURL, reach.Redact(serverURL))
	}
	var b [6]byte
	if _, err := rand.Read(b[:]); err != nil {
		tb.Fatalf("random database name: %v", err)
	}
	name := "fsctl_t_" + hex.EncodeToString(b[:])
	ident := pgx.Identifier{name}.Sanitize()

	admin := func(sql string) error {
		ctx, cancel := context.WithTimeout(context.Background(), dialTimeout*5)
		defer cancel()
		conn, err := pgx.Connect(ctx, serverURL)
		if err != nil {
			return err
		}
		defer conn.Close(context.Background())
		_, err = conn.Exec(ctx, sql)
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), dialTimeout)
	defer cancel()
	conn, err := pgx.Connect(ctx, serverURL)
	if err != nil {
		unreachable(tb, "postgres", u.Host+u.Path, err, stack.EnvPostgresURL, "`make stack-up`")
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(context.Background(), "CREATE DATABASE "+ident); err != nil {
		tb.Fatalf("create database %s: %v", name, err)
	}
	tb.Cleanup(func() {
		if err := admin("DROP DATABASE IF EXISTS " + ident + " WITH (FORCE)"); err != nil {
			tb.Errorf("drop database %s: %v", name, err)
		}
	})
	u.Path = "/" + name
	return u.String()
}
