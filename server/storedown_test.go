package server

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/fsctl/fsctl/internal/checkout/orders"
	"github.com/fsctl/fsctl/internal/harness/testenv"
	"github.com/fsctl/fsctl/internal/platform/reach"
)

// A pay or cancel while PostgreSQL is stopped failed with a connection error that carried no
// code, and the buyer got 500 INTERNAL (a chaos game day found 47 of them during a 2 s
// postgres-stop). A store that cannot be reached is 503 UNAVAILABLE with a Retry-After.
func TestStoreDownIsUnavailableNotInternal(t *testing.T) {
	addr := testenv.ClosedAddr(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, pgErr := pgx.Connect(ctx, "postgres://fsctl@"+addr+"/fsctl?connect_timeout=2")
	_, dialErr := net.Dial("tcp", addr)
	if pgErr == nil || dialErr == nil {
		t.Fatalf("connections to a closed port succeeded: %v, %v", pgErr, dialErr)
	}
	// fsctl serve --start-wait waits out exactly these at start: PostgreSQL's migration and pool
	// against a stopped server must read as a store down, not as a mistake to fail on.
	_, migErr := orders.Migrate(ctx, "postgres://fsctl@"+addr+"/fsctl?connect_timeout=2")
	_, openErr := orders.Open(ctx, "postgres://fsctl@"+addr+"/fsctl?connect_timeout=2")
	if migErr == nil || openErr == nil {
		t.Fatalf("migrate or open against a closed port succeeded: %v, %v", migErr, openErr)
	}
	// A connection PostgreSQL closed (as it does to every one when it stops) fails its next use
	// with "conn closed" before sending anything: chaos seed 15's cancel during a stop got a 500.
	conn, err := pgx.Connect(ctx, testenv.Postgres(t))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, "SELECT pg_terminate_backend(pg_backend_pid())"); err == nil {
		t.Fatal("a backend that terminated itself answered")
	}
	_, closedErr := conn.Begin(ctx)
	if closedErr == nil {
		t.Fatal("a transaction began on a connection PostgreSQL closed")
	}
	down := []error{
		migErr, openErr, fmt.Errorf("cancel order x: %w", closedErr),
		fmt.Errorf("claim payment of order x: %w", pgErr),
		fmt.Errorf("cancel order x: %w", dialErr),
		fmt.Errorf("cancel: %w", &pgconn.PgError{Code: "57P03", Message: "the database system is shutting down"}),
		fmt.Errorf("read: %w", io.ErrUnexpectedEOF),
		reach.Unreachable("postgres", addr+"/fsctl", driver.ErrBadConn), // the migrations' ping
	}
	s := &Server{log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	for _, err := range down {
		if !storeDown(err) {
			t.Errorf("storeDown(%v) = false", err)
		}
		rec := httptest.NewRecorder()
		s.writeError(rec, httptest.NewRequest(http.MethodPost, "/api/v1/orders/x/pay", nil), err)
		if rec.Code != http.StatusServiceUnavailable || rec.Header().Get("Retry-After") == "" {
			t.Errorf("%v: answered %d (Retry-After %q), want 503 with a Retry-After", err, rec.Code, rec.Header().Get("Retry-After"))
		}
	}
	for _, err := range []error{errors.New("a bug"), &pgconn.PgError{Code: "23505"}, &pgconn.PgError{Code: "28P01", Message: "password authentication failed"}} {
		if storeDown(err) {
			t.Errorf("storeDown(%v) = true; a bug or a constraint is not an outage", err)
		}
		rec := httptest.NewRecorder()
		s.writeError(rec, httptest.NewRequest(http.MethodPost, "/api/v1/orders/x/pay", nil), err)
		if rec.Code != http.StatusInternalServerError {
			t.Errorf("%v: answered %d, want 500", err, rec.Code)
		}
	}
}
