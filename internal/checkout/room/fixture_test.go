package room_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/fsctl/fsctl/internal/checkout/room"
	"github.com/fsctl/fsctl/internal/contract/outcome"
	"github.com/fsctl/fsctl/internal/contract/sale"
	"github.com/fsctl/fsctl/internal/harness/testenv"
)

// fixture is one sale's waiting room on the shared Redis, under a sale id no other test uses.
type fixture struct {
	t     *testing.T
	ctx   context.Context
	rdb   redis.UniversalClient
	open  func(testing.TB) redis.UniversalClient // another client of the same Redis
	store *room.Store
	sale  string
}

// newRoom configures a room on the shared single Redis, opening at opensAt; its keys are deleted
// when the test ends.
func newRoom(t *testing.T, r sale.Room, opensAt time.Time, opts ...room.Option) *fixture {
	t.Helper()
	return newRoomOn(t, func(tb testing.TB) redis.UniversalClient { return testenv.Redis(tb) }, r, opensAt, opts...)
}

// newRoomOn is newRoom on the Redis open connects to (the local Redis Cluster, say).
func newRoomOn(t *testing.T, open func(testing.TB) redis.UniversalClient, r sale.Room, opensAt time.Time, opts ...room.Option) *fixture {
	t.Helper()
	rdb := open(t)
	f := &fixture{t: t, ctx: context.Background(), rdb: rdb, open: open, store: room.New(rdb, opts...), sale: testenv.ID(t, "room")}
	t.Cleanup(func() {
		if err := f.store.Reset(context.Background(), f.sale); err != nil {
			t.Errorf("reset: %v", err)
		}
	})
	if err := f.store.LoadScripts(f.ctx); err != nil {
		t.Fatal(err)
	}
	if err := f.store.Configure(f.ctx, f.sale, r, opensAt, 0); err != nil {
		t.Fatalf("configure: %v", err)
	}
	return f
}

// seeded is a random source that replays from seed.
func seeded(seed uint64) room.Option {
	return room.WithRandom(rand.New(rand.NewPCG(seed, seed^0x9e37)).Uint64)
}

// instance is a second server instance on the same room: its own Redis client and Store.
func (f *fixture) instance() *room.Store { return room.New(f.open(f.t)) }

func (f *fixture) join(user string) room.Ticket {
	f.t.Helper()
	tk, err := f.store.Join(f.ctx, f.sale, user)
	if err != nil {
		f.t.Fatalf("join %s: %v", user, err)
	}
	return tk
}

func (f *fixture) poll(tk room.Ticket) room.Ticket {
	f.t.Helper()
	got, err := f.store.Poll(f.ctx, f.sale, tk.ID, tk.UserID)
	if err != nil {
		f.t.Fatalf("poll %s of %s: %v", tk.ID, tk.UserID, err)
	}
	if got.ID != tk.ID || got.UserID != tk.UserID {
		f.t.Fatalf("poll %s of %s answered for %s of %s", tk.ID, tk.UserID, got.ID, got.UserID)
	}
	return got
}

func (f *fixture) tick() room.TickResult {
	f.t.Helper()
	r, err := f.store.Tick(f.ctx, f.sale)
	if err != nil {
		f.t.Fatalf("tick: %v", err)
	}
	return r
}

func (f *fixture) stats() room.Stats {
	f.t.Helper()
	st, err := f.store.Stats(f.ctx, f.sale)
	if err != nil {
		f.t.Fatalf("stats: %v", err)
	}
	return st
}

// keepAlive polls the tickets every 200 ms for d, as live clients do, failing on any ticket that
// is not waiting or admitted.
func (f *fixture) keepAlive(d time.Duration, tks ...room.Ticket) {
	f.t.Helper()
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(200 * time.Millisecond) {
		for _, tk := range tks {
			if got := f.poll(tk); got.Status != room.StatusWaiting && got.Status != room.StatusAdmitted {
				f.t.Fatalf("kept-alive ticket of %s is %s", tk.UserID, got.Status)
			}
		}
	}
}

// wantCode fails the test unless err is an *outcome.Error with code.
func wantCode(t *testing.T, err error, code outcome.Code) {
	t.Helper()
	var e *outcome.Error
	if !errors.As(err, &e) || e.Code != code {
		t.Fatalf("error = %v, want an *outcome.Error with %s", err, code)
	}
}
