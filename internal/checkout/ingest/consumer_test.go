package ingest

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/fsctl/fsctl/internal/checkout/orders"
)

// poisonPlacer stands in for PostgreSQL's verdict on a batch: any batch holding a poison order is
// rejected whole, as a CHECK violation inside one transaction would be; outage fails every batch.
type poisonPlacer struct {
	poison map[uuid.UUID]bool
	outage bool
	calls  int
}

func (p *poisonPlacer) PlaceBatch(_ context.Context, ps []orders.Placement) ([]orders.PlaceResult, error) {
	p.calls++
	if p.outage {
		return nil, errors.New("dial tcp 127.0.0.1:15432: connection refused")
	}
	out := make([]orders.PlaceResult, len(ps))
	for i, pl := range ps {
		if p.poison[pl.OrderID] {
			return nil, &pgconn.PgError{Code: "23514", Message: "violates check constraint"}
		}
		out[i] = orders.PlaceResult{OrderID: pl.OrderID, Result: orders.Placed}
	}
	return out, nil
}

func (p *poisonPlacer) MarkPaidBatch(context.Context, []orders.PaidMark) ([]orders.PaidResult, error) {
	return nil, errors.New("not used")
}

func TestPlaceIsolatesPoisonMessages(t *testing.T) {
	ps := make([]orders.Placement, 37)
	for i := range ps {
		ps[i].OrderID = uuid.New()
	}
	placer := &poisonPlacer{poison: map[uuid.UUID]bool{ps[3].OrderID: true, ps[30].OrderID: true}}
	c := NewRecorder(placer, nil, nil, Metrics{}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	res, err := c.place(context.Background(), ps)
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != len(ps) {
		t.Fatalf("%d results for %d placements", len(res), len(ps))
	}
	for i, r := range res {
		if r.OrderID != ps[i].OrderID {
			t.Fatalf("result %d is for %s, want %s (order kept)", i, r.OrderID, ps[i].OrderID)
		}
		poison := i == 3 || i == 30
		if poison && (r.Result != orders.Refused || r.Reason != ReasonRejected) {
			t.Fatalf("poison order %d: %+v, want refused/rejected", i, r)
		}
		if !poison && r.Result != orders.Placed {
			t.Fatalf("good order %d: %+v, want placed", i, r)
		}
	}

	placer.outage = true
	if _, err := c.place(context.Background(), ps); err == nil || orders.IsRejected(err) {
		t.Fatalf("an outage must fail the batch for a retry, got %v", err)
	}
}

func TestIsRejected(t *testing.T) {
	for code, want := range map[string]bool{"23505": true, "22P02": true, "23514": true, "40P01": false, "57P01": false, "53300": false} {
		if got := orders.IsRejected(&pgconn.PgError{Code: code}); got != want {
			t.Errorf("%s: %v, want %v", code, got, want)
		}
	}
	if orders.IsRejected(errors.New("plain")) {
		t.Error("a plain error is not a rejection")
	}
}
