package control

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/fsctl/fsctl/internal/harness/testenv"
)

func TestSwitchesReachWatchers(t *testing.T) {
	rdb := testenv.Redis(t)
	ctx := context.Background()
	key := testenv.ID(t, "switches")
	t.Cleanup(func() { rdb.Del(context.Background(), key) })
	st := NewStore(rdb, key)
	if err := st.Set(ctx, "bogus", true); err == nil {
		t.Fatal("an unknown switch was accepted")
	}
	w1 := NewWatcher(st, 10*time.Millisecond, slog.New(slog.NewTextHandler(io.Discard, nil)))
	w2 := NewWatcher(st, 10*time.Millisecond, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err := st.Set(ctx, Payment, true); err != nil {
		t.Fatal(err)
	}
	for _, w := range []*Watcher{w1, w2} {
		if err := w.Refresh(ctx); err != nil {
			t.Fatal(err)
		}
		if !w.Off(Payment) || w.Off(Purchase) {
			t.Fatalf("watcher sees payment=%v purchase=%v, want true false", w.Off(Payment), w.Off(Purchase))
		}
	}
	if err := st.Set(ctx, Payment, false); err != nil {
		t.Fatal(err)
	}
	got, err := st.Get(ctx)
	if err != nil || got[Payment] {
		t.Fatalf("after reset: %v %v", got, err)
	}
}
