// Package stock is the Redis side of the reservation core: the key scheme, the preload of a sale,
// and the atomic scripts of package lua that reserve, release and settle units, including the
// shards a hot item's stock is split into and the transfers that move units between them.
package stock

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/fsctl/fsctl/lua"
)

// Default retention of the records that outlive a reservation, and the default borrowing batch.
const (
	DefaultIdemTTL       = 24 * time.Hour
	DefaultMarkerTTL     = 7 * 24 * time.Hour
	DefaultTransferBatch = 1
)

// Store runs the reservation scripts against one Redis (or Redis Cluster).
type Store struct {
	rdb           redis.UniversalClient
	reserve       *redis.Script
	release       *redis.Script
	settle        *redis.Script
	preload       *redis.Script
	reload        *redis.Script
	transferOut   *redis.Script
	applyTransfer *redis.Script
	restore       *redis.Script
	idemTTL       time.Duration
	markerTTL     time.Duration
	transferBatch int64
	// batch shares the hot path's round trips between concurrent purchases; nil sends each alone.
	batch *batcher
	// refInScript is true when the reserve script can write the order reference itself: on one
	// Redis every key is on the same node. On a cluster the reference (keyed by order id, not by
	// the item's hash tag) lives elsewhere and Reserve writes it right after the script.
	refInScript bool
	// idemTTLms and markerTTLms are the TTLs as the scripts take them, formatted once.
	idemTTLms, markerTTLms string

	keysMu sync.RWMutex
	keys   map[shardID]*reserveKeys
}

// Option configures a Store.
type Option func(*Store)

// IdemTTL sets how long the answer to an Idempotency-Key is remembered.
func IdemTTL(d time.Duration) Option { return func(s *Store) { s.idemTTL = d } }

// TransferBatch sets how many units a buyer whose home shard is empty moves in from another shard
// at once (at least 1). Units beyond the buyer's own stay in the home shard for its next buyers.
func TransferBatch(n int) Option { return func(s *Store) { s.transferBatch = int64(max(n, 1)) } }

// Batch sets how the hot path's scripts (the reserve, the borrowing between shards) share round
// trips: at most maxCmds commands per pipeline,
// at most lanes pipelines in flight at once. Batching is on by default (DefaultBatchMax,
// DefaultBatchLanes); maxCmds 0 turns it off, so every command makes its own round trip.
func Batch(maxCmds, lanes int) Option {
	return func(s *Store) {
		s.batch = nil
		if maxCmds > 0 {
			s.batch = newBatcher(s.rdb, maxCmds, lanes)
		}
	}
}

// New returns a Store over rdb.
func New(rdb redis.UniversalClient, opts ...Option) *Store {
	_, single := rdb.(*redis.Client)
	s := &Store{
		rdb:           rdb,
		reserve:       redis.NewScript(lua.Reserve),
		release:       redis.NewScript(lua.Release),
		settle:        redis.NewScript(lua.Settle),
		preload:       redis.NewScript(lua.Preload),
		reload:        redis.NewScript(lua.Reload),
		transferOut:   redis.NewScript(lua.TransferOut),
		applyTransfer: redis.NewScript(lua.ApplyTransfer),
		restore:       redis.NewScript(lua.Restore),
		idemTTL:       DefaultIdemTTL,
		markerTTL:     DefaultMarkerTTL,
		transferBatch: DefaultTransferBatch,
		batch:         newBatcher(rdb, DefaultBatchMax, DefaultBatchLanes),
		refInScript:   single,
	}
	for _, o := range opts {
		o(s)
	}
	s.idemTTLms = strconv.FormatInt(s.idemTTL.Milliseconds(), 10)
	s.markerTTLms = strconv.FormatInt(s.markerTTL.Milliseconds(), 10)
	s.keys = make(map[shardID]*reserveKeys)
	return s
}

// eval runs a script, batched with other concurrent commands unless batching is off.
func (s *Store) eval(ctx context.Context, sc *redis.Script, keys []string, args ...any) *redis.Cmd {
	if s.batch == nil {
		return sc.Run(ctx, s.rdb, keys, args...)
	}
	a := make([]any, 0, 3+len(keys)+len(args))
	a = append(a, "evalsha", sc.Hash(), len(keys))
	for _, k := range keys {
		a = append(a, k)
	}
	a = append(a, args...)
	cmd := redis.NewCmd(ctx, a...)
	_ = s.batch.do(ctx, cmd, sc)
	return cmd
}

// Epoch reads the epoch of one shard's state (Reservation.Epoch), batched like a reserve: ok is
// false when the shard is not loaded (its state was lost, or is being rebuilt).
func (s *Store) Epoch(ctx context.Context, saleID, itemID string, shard, shards int) (epoch int64, ok bool, err error) {
	cmd := redis.NewSliceCmd(ctx, "hmget", ShardKeys(saleID, itemID, shard, shards).Meta(), "opens_at_ms", "epoch")
	if s.batch == nil {
		err = s.rdb.Process(ctx, cmd)
	} else {
		err = s.batch.do(ctx, cmd, nil)
	}
	v := cmd.Val()
	if err != nil {
		return 0, false, fmt.Errorf("read the epoch of %s/%s shard %d: %w", saleID, itemID, shard, err)
	}
	if len(v) != 2 || v[0] == nil {
		return 0, false, nil
	}
	if v[1] == nil {
		return 0, true, nil
	}
	str, _ := v[1].(string)
	if epoch, err = strconv.ParseInt(str, 10, 64); err != nil {
		return 0, false, fmt.Errorf("epoch of %s/%s shard %d is %q: %w", saleID, itemID, shard, str, err)
	}
	return epoch, true, nil
}

// Client returns the Redis client the store uses.
func (s *Store) Client() redis.UniversalClient { return s.rdb }

func (s *Store) scripts() []struct {
	name string
	sc   *redis.Script
} {
	return []struct {
		name string
		sc   *redis.Script
	}{
		{"reserve", s.reserve}, {"release", s.release}, {"settle", s.settle}, {"preload", s.preload},
		{"reload", s.reload}, {"transfer_out", s.transferOut}, {"apply_transfer", s.applyTransfer}, {"restore", s.restore},
	}
}

// LoadScripts loads every script into Redis's script cache, so the first burst of EVALSHA calls
// does not fall back to sending the script body.
func (s *Store) LoadScripts(ctx context.Context) error {
	for _, sc := range s.scripts() {
		if err := sc.sc.Load(ctx, s.rdb).Err(); err != nil {
			return fmt.Errorf("load %s script: %w", sc.name, err)
		}
	}
	return nil
}

// ScriptHashes names the SHA1 of every stock script, for a readiness check's SCRIPT EXISTS.
func (s *Store) ScriptHashes() map[string]string {
	out := map[string]string{}
	for _, sc := range s.scripts() {
		out[sc.name] = sc.sc.Hash()
	}
	return out
}

// ScriptsLoaded reports whether every script is in Redis's script cache.
func (s *Store) ScriptsLoaded(ctx context.Context) (bool, error) {
	scs := s.scripts()
	hashes := make([]string, len(scs))
	for i, sc := range scs {
		hashes[i] = sc.sc.Hash()
	}
	ok, err := s.rdb.ScriptExists(ctx, hashes...).Result()
	if err != nil {
		return false, err
	}
	for _, loaded := range ok {
		if !loaded {
			return false, nil
		}
	}
	return len(ok) == len(hashes), nil
}
