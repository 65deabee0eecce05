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

	"github.com/google/uuid"
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
	confirm       *redis.Script
	preload       *redis.Script
	reload        *redis.Script
	transferOut   *redis.Script
	applyTransfer *redis.Script
	restore       *redis.Script
	claimer       *redis.Script
	unclaimer     *redis.Script
	idemTTL       time.Duration
	markerTTL     time.Duration
	transferBatch int64
	// batch shares the hot path's round trips between concurrent purchases; nil sends each alone.
	batch *batcher
	// unmerged sends each reserve as a call of its own (MergeReserves).
	unmerged bool
	// refInScript is true when the reserve script can write the order reference itself: on one
	// Redis every key is on the same node. On a cluster the reference (keyed by order id, not by
	// the item's hash tag) lives elsewhere and Reserve writes it right after the script.
	refInScript bool
	// idemTTLms and markerTTLms are the TTLs as the scripts take them, formatted once; the
	// reserve's call line takes them (and the script's hash) as the any values built here.
	idemTTLms, markerTTLms               string
	idemTTLArg, markerTTLArg, reserveSHA any
	// plainHome runs a reserve through the store's client (homeCaller), built once.
	plainHome homeCall

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
			s.batch = newBatcher(s.rdb, s.reserve, maxCmds, lanes)
		}
	}
}

// MergeReserves sets whether the reserves of one shard that meet in a pipeline go to Redis as one
// call of the script (on, the default) or as a call each, as before the merge was measured
// (BenchmarkRedisReserveMerged in ./benchmarks). Without batching there is nothing to merge.
func MergeReserves(on bool) Option { return func(s *Store) { s.unmerged = !on } }

// New returns a Store over rdb.
func New(rdb redis.UniversalClient, opts ...Option) *Store {
	_, single := rdb.(*redis.Client)
	s := &Store{
		rdb:           rdb,
		reserve:       redis.NewScript(lua.Reserve),
		release:       redis.NewScript(lua.Release),
		settle:        redis.NewScript(lua.Settle),
		confirm:       redis.NewScript(lua.Confirm),
		preload:       redis.NewScript(lua.Preload),
		reload:        redis.NewScript(lua.Reload),
		transferOut:   redis.NewScript(lua.TransferOut),
		applyTransfer: redis.NewScript(lua.ApplyTransfer),
		restore:       redis.NewScript(lua.Restore),
		claimer:       redis.NewScript(lua.Claim),
		unclaimer:     redis.NewScript(lua.Unclaim),
		idemTTL:       DefaultIdemTTL,
		markerTTL:     DefaultMarkerTTL,
		transferBatch: DefaultTransferBatch,
		refInScript:   single,
	}
	s.batch = newBatcher(rdb, s.reserve, DefaultBatchMax, DefaultBatchLanes)
	for _, o := range opts {
		o(s)
	}
	if s.batch != nil && s.unmerged {
		s.batch.reserve = nil
	}
	s.idemTTLms = strconv.FormatInt(s.idemTTL.Milliseconds(), 10)
	s.markerTTLms = strconv.FormatInt(s.markerTTL.Milliseconds(), 10)
	s.idemTTLArg, s.markerTTLArg, s.reserveSHA = s.idemTTLms, s.markerTTLms, s.reserve.Hash()
	s.keys = make(map[shardID]*reserveKeys)
	s.plainHome = func(ctx context.Context, c scriptCall) (string, int, error) {
		res, err := reserveAnswer(s.evalCall(ctx, s.reserve, c))
		return res, -1, err
	}
	return s
}

// scriptCall is a script's call as Redis takes it: "evalsha", the script's hash, the number of
// keys, the keys, then the arguments. go-redis takes a command as one []any; the reserve builds
// its call line once, with a shard's keys boxed once (reserveKeys), instead of a slice of keys and
// one of arguments that eval copies into a third, boxing every key again: a dozen allocations a
// purchase.
type scriptCall []any

func newScriptCall(sha any, keys, args int) scriptCall {
	return append(make(scriptCall, 0, 3+keys+args), "evalsha", sha, keys)
}

// keys and args split the call again, for the ways of running a script that take them apart.
func (c scriptCall) keys() []string {
	keys := make([]string, c[2].(int))
	for i := range keys {
		keys[i] = c[3+i].(string)
	}
	return keys
}

func (c scriptCall) args() []any { return c[3+c[2].(int):] }

// eval runs a script, batched with other concurrent commands unless batching is off.
func (s *Store) eval(ctx context.Context, sc *redis.Script, keys []string, args ...any) *redis.Cmd {
	if s.batch == nil {
		return sc.Run(ctx, s.rdb, keys, args...)
	}
	c := newScriptCall(sc.Hash(), len(keys), len(args))
	for _, k := range keys {
		c = append(c, k)
	}
	return s.evalCall(ctx, sc, append(c, args...))
}

// evalCall runs a script's call line as eval does.
func (s *Store) evalCall(ctx context.Context, sc *redis.Script, c scriptCall) *redis.Cmd {
	if s.batch == nil {
		return sc.Run(ctx, s.rdb, c.keys(), c.args()...)
	}
	cmd := redis.NewCmd(ctx, c...)
	if err := s.batch.do(ctx, cmd, sc); err != nil && ctx.Err() != nil {
		// The caller's deadline ended the wait, but the pipeline still owns cmd and may write
		// its answer into it at any moment: the caller gets a command of its own instead.
		cut := redis.NewCmd(ctx, c...)
		cut.SetErr(err)
		return cut
	}
	return cmd
}

// Confirm is the last step of a hand-off, after Kafka acknowledged it (lua/confirm.lua, batched
// like a reserve): the order is still live on the shard state it was reserved on (its epoch), and
// is marked handed off, so the failed hand-off of a concurrent attempt cannot release it. False:
// the buyer must not be told RESERVED.
func (s *Store) Confirm(ctx context.Context, saleID, itemID string, shard, shards int, orderID uuid.UUID, epoch int64) (bool, error) {
	k := ShardKeys(saleID, itemID, shard, shards)
	n, err := s.eval(ctx, s.confirm, []string{k.Meta(), k.Orders(), k.Handed(orderID), k.Released(orderID)},
		strconv.FormatInt(epoch, 10), orderID.String(), s.markerTTL.Milliseconds()).Int()
	if err != nil {
		return false, fmt.Errorf("confirm order %s: %w", orderID, err)
	}
	return n == 1, nil
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
		{"reserve", s.reserve}, {"release", s.release}, {"settle", s.settle}, {"confirm", s.confirm}, {"preload", s.preload},
		{"reload", s.reload}, {"transfer_out", s.transferOut}, {"apply_transfer", s.applyTransfer}, {"restore", s.restore},
		{"claim", s.claimer}, {"unclaim", s.unclaimer},
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
