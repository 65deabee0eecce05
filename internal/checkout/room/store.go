// Package room is the waiting room in front of a sale's purchase path: a Redis queue that buyers
// join and poll, paced admission into a capped set of active buyers, the signed admission tokens the
// purchase path checks, and proof-of-work challenges that make queue entry cost a bot farm per account.
//
// Every operation is one Lua script on keys that share one hash tag and read Redis TIME, so any
// number of server instances share a room and agree on its clock. Admissions happen only in Tick,
// which every instance may call on a timer (every 50–100 ms is plenty); the rate holds whatever the
// number of instances or the ticking frequency.
package room

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"math"
	"strconv"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/fsctl/fsctl/internal/contract/outcome"
	"github.com/fsctl/fsctl/internal/contract/sale"
)

// RoundBound is the most expired waiters, lapsed leases and admissions one Tick handles of each, so
// one script never blocks Redis for long; the rest waits for the next round.
const RoundBound = 1000

// preQueueBits is the width of a random pre-queue score: below 2^52 every later joiner's 2^52 + n
// sorts behind it, and both stay exact in a float64 score.
const preQueueBits = 52

// Keys names the Redis keys of one sale's room. They share the hash tag {fs-room:<sale>}, so every
// script touches one Redis Cluster slot; the tag cannot collide with stock's {fs:<sale>:<item>}.
type Keys struct{ tag string }

// SaleKeys returns the key set of a sale's room.
func SaleKeys(saleID string) Keys { return Keys{tag: "{fs-room:" + saleID + "}"} }

// Meta is a hash of the room's settings (opens_at_ms, rate, max_active, fair, waiter_ttl_ms,
// active_ttl_ms, paused) and running state (allowance, last_ms, seq, admitted_total, expired_total).
func (k Keys) Meta() string { return k.tag + ":meta" }

// Users is a hash from user id to the user's current ticket.
func (k Keys) Users() string { return k.tag + ":users" }

// Tickets is a hash from ticket id to its user; it keeps an expired ticket for TombstoneTTL, so its
// holder's polls say expired rather than not found.
func (k Keys) Tickets() string { return k.tag + ":tickets" }

// Ended is a sorted set of expired tickets scored by when they expired in Unix milliseconds: the
// tick deletes their Tickets entries once TombstoneTTL has passed, so a sale's room holds the
// tickets of its live waiters and of the last minutes, not of every join since the opening.
func (k Keys) Ended() string { return k.tag + ":ended" }

// Queue is a sorted set of waiting tickets scored by their place in line.
func (k Keys) Queue() string { return k.tag + ":queue" }

// Seen is a sorted set of waiting tickets scored by their last poll in Unix milliseconds.
func (k Keys) Seen() string { return k.tag + ":seen" }

// Active is a sorted set of admitted tickets scored by lease expiry in Unix milliseconds.
func (k Keys) Active() string { return k.tag + ":active" }

func (k Keys) all() []string {
	return []string{k.Meta(), k.Users(), k.Tickets(), k.Queue(), k.Seen(), k.Active(), k.Ended()}
}

// Store runs the room scripts against one Redis (or Redis Cluster). It is safe for concurrent use.
type Store struct {
	rdb     redis.UniversalClient
	scripts scripts
	mu      sync.Mutex // guards random, which an injected source may not do itself
	random  func() uint64
	// tombstoneTTL is how long an expired ticket keeps answering "expired" (TombstoneTTL).
	tombstoneTTL time.Duration
}

// TombstoneTTL is how long an expired ticket's holder still hears "expired" from a poll before the
// ticket is forgotten ("not found": join again). It bounds the tickets a room keeps.
const TombstoneTTL = 10 * time.Minute

// Tombstones sets how long expired tickets are kept (TombstoneTTL by default).
func Tombstones(d time.Duration) Option { return func(s *Store) { s.tombstoneTTL = d } }

// Option configures a Store.
type Option func(*Store)

// WithRandom sets the source of ticket ids and pre-queue places, so tests can replay an order from a
// seed. In production keep the default, crypto/rand: a predictable source lets a script foresee
// places in the random pre-queue.
func WithRandom(r func() uint64) Option { return func(s *Store) { s.random = r } }

// New returns a Store over rdb.
func New(rdb redis.UniversalClient, opts ...Option) *Store {
	s := &Store{rdb: rdb, scripts: newScripts(), random: cryptoUint64, tombstoneTTL: TombstoneTTL}
	for _, o := range opts {
		o(s)
	}
	return s
}

func cryptoUint64() uint64 {
	var b [8]byte
	_, _ = rand.Read(b[:]) // never fails since Go 1.24: it crashes the program instead
	return binary.LittleEndian.Uint64(b[:])
}

func (s *Store) draw(n int) []uint64 {
	out := make([]uint64, n)
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := range out {
		out[i] = s.random()
	}
	return out
}

// LoadScripts loads every script into Redis's script cache, so the first burst of EVALSHA calls
// does not fall back to sending the script body.
func (s *Store) LoadScripts(ctx context.Context) error {
	for name, sc := range s.scripts.all() {
		if err := sc.Load(ctx, s.rdb).Err(); err != nil {
			return fmt.Errorf("load room %s script: %w", name, err)
		}
	}
	return nil
}

// ScriptHashes names the SHA1 of every room script, for a readiness check's SCRIPT EXISTS.
func (s *Store) ScriptHashes() map[string]string {
	out := map[string]string{}
	for name, sc := range s.scripts.all() {
		out[name] = sc.Hash()
	}
	return out
}

// Configure writes (or updates) a sale's room settings and opening time, keeping the queue, the
// admitted set and the counters; the operator also uses it to change rate, cap or pause live. Zero
// fields of r take sale's defaults (random fair start, DefaultWaiterTTL, DefaultActiveTTL).
// revision is the sale's (sale.Sale.Revision): when the room already holds settings written at a
// later one, Configure changes nothing and answers nil, since the caller's copy of the sale is
// older than what is live. Revision 0 is not checked.
func (s *Store) Configure(ctx context.Context, saleID string, r sale.Room, opensAt time.Time, revision int64) error {
	if !sale.ValidSlug(saleID) {
		return fmt.Errorf("room of sale %q: sale id must match [A-Za-z0-9_-]{1,64}", saleID)
	}
	r = withDefaults(r)
	if err := checkRoom(r); err != nil {
		return fmt.Errorf("room of sale %s: %w", saleID, err)
	}
	_, err := s.settings(ctx, saleID, true, strconv.FormatInt(opensAt.UnixMilli(), 10), formatRate(r.AdmissionRate),
		strconv.Itoa(r.MaxActive), r.FairStart, strconv.FormatInt(r.WaiterTTL.Milliseconds(), 10),
		strconv.FormatInt(r.ActiveTTL.Milliseconds(), 10), flag(r.Paused), strconv.FormatInt(revision, 10))
	return err
}

// SetPaused stops (or resumes) admissions; the queue keeps its order. Either way the token bucket
// starts empty, so a resume never releases admissions saved up before it.
func (s *Store) SetPaused(ctx context.Context, saleID string, paused bool) error {
	_, err := s.settings(ctx, saleID, false, "", "", "", "", "", "", flag(paused), "")
	return err
}

// SetRate changes the admission rate (buyers per second, above 0) and the cap on active buyers
// (0 = none) of a running room.
func (s *Store) SetRate(ctx context.Context, saleID string, rate float64, maxActive int) error {
	if err := checkRoom(sale.Room{AdmissionRate: rate, MaxActive: maxActive, FairStart: sale.FairStartFIFO,
		WaiterTTL: time.Second, ActiveTTL: time.Second}); err != nil {
		return fmt.Errorf("room of sale %s: %w", saleID, err)
	}
	_, err := s.settings(ctx, saleID, false, "", formatRate(rate), strconv.Itoa(maxActive), "", "", "", "", "")
	return err
}

func (s *Store) settings(ctx context.Context, saleID string, create bool, values ...any) (bool, error) {
	args := append([]any{flag(create)}, values...)
	n, err := s.scripts.settings.Run(ctx, s.rdb, SaleKeys(saleID).all(), args...).Int()
	if err != nil {
		return false, fmt.Errorf("room of sale %s: settings: %w", saleID, err)
	}
	if n == 0 {
		return false, noRoom(saleID)
	}
	return true, nil
}

func withDefaults(r sale.Room) sale.Room {
	if r.FairStart == "" {
		r.FairStart = sale.FairStartRandom
	}
	if r.WaiterTTL == 0 {
		r.WaiterTTL = sale.DefaultWaiterTTL
	}
	if r.ActiveTTL == 0 {
		r.ActiveTTL = sale.DefaultActiveTTL
	}
	return r
}

// checkRoom repeats sale's rules for the fields the room uses: Configure may be called with a Room
// that never went through sale.Validate (the admin API's live changes).
func checkRoom(r sale.Room) error {
	switch {
	case !(r.AdmissionRate > 0) || math.IsInf(r.AdmissionRate, 0):
		return fmt.Errorf("admission rate %g: must be above 0 buyers per second", r.AdmissionRate)
	case r.MaxActive < 0:
		return fmt.Errorf("maxActive %d must not be negative", r.MaxActive)
	case r.FairStart != sale.FairStartRandom && r.FairStart != sale.FairStartFIFO:
		return fmt.Errorf("fairStart %q: must be random or fifo", r.FairStart)
	case r.WaiterTTL < time.Second || r.ActiveTTL < time.Second:
		return fmt.Errorf("waiterTTL %s and activeTTL %s must be at least 1s", r.WaiterTTL, r.ActiveTTL)
	}
	return nil
}

func formatRate(r float64) string { return strconv.FormatFloat(r, 'g', -1, 64) }

func flag(b bool) string {
	if b {
		return "1"
	}
	return "0"
}

func noRoom(saleID string) error {
	return outcome.Errorf(outcome.NotFound, "sale %s has no waiting room", saleID)
}

// Stats is a snapshot of a room for operators.
type Stats struct {
	Depth, Active, AdmittedTotal, ExpiredTotal int64
	Rate                                       float64
	MaxActive                                  int
	Paused                                     bool
	OpensAt                                    time.Time
	// EstimatedWait is how long the last in line waits at the current rate: Depth / Rate.
	EstimatedWait time.Duration
}

// Stats reads a room's counters and settings in one MULTI, so they agree with each other. A sale
// without a room is an *outcome.Error with outcome.NotFound.
func (s *Store) Stats(ctx context.Context, saleID string) (Stats, error) {
	k := SaleKeys(saleID)
	pipe := s.rdb.TxPipeline()
	m := pipe.HMGet(ctx, k.Meta(), "opens_at_ms", "rate", "max_active", "paused", "admitted_total", "expired_total")
	depth := pipe.ZCard(ctx, k.Queue())
	active := pipe.ZCard(ctx, k.Active())
	if _, err := pipe.Exec(ctx); err != nil {
		return Stats{}, fmt.Errorf("room of sale %s: stats: %w", saleID, err)
	}
	v := m.Val()
	if v[0] == nil {
		return Stats{}, noRoom(saleID)
	}
	str := func(i int) string { s, _ := v[i].(string); return s }
	opens, _ := strconv.ParseInt(str(0), 10, 64)
	rate, _ := strconv.ParseFloat(str(1), 64)
	maxActive, _ := strconv.Atoi(str(2))
	admitted, _ := strconv.ParseInt(str(4), 10, 64)
	expired, _ := strconv.ParseInt(str(5), 10, 64)
	return Stats{
		Depth: depth.Val(), Active: active.Val(), AdmittedTotal: admitted, ExpiredTotal: expired,
		Rate: rate, MaxActive: maxActive, Paused: str(3) == "1", OpensAt: time.UnixMilli(opens),
		EstimatedWait: waitFor(depth.Val(), rate),
	}, nil
}

// waitFor is how long n buyers take to leave the queue at rate per second.
func waitFor(n int64, rate float64) time.Duration {
	if rate <= 0 || n <= 0 {
		return 0
	}
	return time.Duration(float64(n) / rate * float64(time.Second))
}

// Reset deletes a sale's room: settings, queue, admitted set and counters.
func (s *Store) Reset(ctx context.Context, saleID string) error {
	_, err := s.Delete(ctx, saleID)
	return err
}

// Delete is Reset that says how many of the room's keys there were: what a Redis that loses the
// room's state loses (a game day's room-state-lost counts them).
func (s *Store) Delete(ctx context.Context, saleID string) (int64, error) {
	n, err := s.rdb.Del(ctx, SaleKeys(saleID).all()...).Result()
	if err != nil {
		return 0, fmt.Errorf("room of sale %s: reset: %w", saleID, err)
	}
	return n, nil
}
