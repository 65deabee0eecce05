package saleops

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/fsctl/fsctl/internal/contract/sale"
)

// flags are both stores' pause flags: each write is logged, in order, and refused with its error.
type flags struct {
	log          *[]string
	pgErr, rdErr error
}

type pgFlags flags

func (f pgFlags) SetPaused(_ context.Context, saleID string, paused bool) error {
	*f.log = append(*f.log, "postgres")
	return f.pgErr
}

type redisFlags flags

func (f redisFlags) SetPaused(_ context.Context, sl sale.Sale, paused bool) error {
	*f.log = append(*f.log, "redis")
	return f.rdErr
}

// TestSetPaused: PostgreSQL first, then Redis, and a failure says how far it got in the words
// the CLI prints; the admin API tells the two apart by PauseError.Saved.
func TestSetPaused(t *testing.T) {
	boom := errors.New("boom")
	for name, tc := range map[string]struct {
		pgErr, rdErr error
		writes       []string
		saved        bool
		msg          string
	}{
		"both written":      {writes: []string{"postgres", "redis"}},
		"postgres refuses":  {pgErr: boom, writes: []string{"postgres"}, msg: "nothing changed: boom"},
		"redis unreachable": {rdErr: boom, writes: []string{"postgres", "redis"}, saved: true, msg: "saved in PostgreSQL but not live in Redis yet, run it again: boom"},
	} {
		t.Run(name, func(t *testing.T) {
			var log []string
			f := flags{log: &log, pgErr: tc.pgErr, rdErr: tc.rdErr}
			err := SetPaused(context.Background(), pgFlags(f), redisFlags(f), sale.Sale{ID: "bf"}, true)
			if !slices.Equal(log, tc.writes) {
				t.Errorf("wrote %q, want %q", log, tc.writes)
			}
			if tc.msg == "" {
				if err != nil {
					t.Errorf("SetPaused: %v", err)
				}
				return
			}
			pe, ok := errors.AsType[*PauseError](err)
			if !ok || pe.Saved != tc.saved || err.Error() != tc.msg || !errors.Is(err, boom) {
				t.Errorf("SetPaused: %v (%T), want %q with Saved %v wrapping the store's error", err, err, tc.msg, tc.saved)
			}
		})
	}
}
