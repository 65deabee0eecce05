package stock

import (
	"context"
	"encoding/binary"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"

	"github.com/fsctl/fsctl/internal/contract/outcome"
	"github.com/fsctl/fsctl/internal/contract/sale"
)

// empty is the reserve script's answer when a sharded home shard has no stock: the caller borrows
// and asks again. It never leaves this package.
const empty outcome.Code = "EMPTY"

// Request is one purchase attempt as the reserve script sees it.
type Request struct {
	SaleID, ItemID string
	UserID         string
	IdemKey        string
	// OrderID is the id the order gets if this attempt reserves a unit.
	OrderID uuid.UUID
	// Shards is the item's shard count (sale.Item.ShardCount()); 0 and 1 mean unsharded.
	Shards int
	// WaitReplicas, when above zero, makes a fresh reservation wait (Redis WAIT) until that many
	// replicas acknowledged it or WaitTimeout (sale.DefaultWaitTimeout when zero) passed.
	WaitReplicas int
	WaitTimeout  time.Duration
	// NoBorrow answers from the buyer's home shard alone: an empty home shard is SOLD_OUT
	// (remembered) instead of a reason to borrow from the others. It is the sold-out fast path
	// of a server that has seen the whole item empty: one script call that still gives every
	// other answer the script gives (a replay, ALREADY_PURCHASED, PAUSED, a unit released back
	// into the home shard). Unsharded items are unaffected.
	NoBorrow bool
	// SaleLimit, when above zero, is the sale's per-sale limit: the attempt first claims one of the
	// buyer's per-sale slots (claims.go), and a buyer holding that many units of the sale's items
	// is answered ALREADY_PURCHASED (Reservation.SaleLimited) without a reserve.
	SaleLimit int

	saleSlot string // the claim slot the reserve records with the order ('' for none)
}

// Reservation is the answer to a Request.
type Reservation struct {
	Outcome   outcome.Code
	OrderID   uuid.UUID
	ExpiresAt time.Time
	Slot      int
	// Replay is true when the answer was remembered from an earlier request with the same key.
	Replay bool
	// Shard is where the buyer's records and hold live: always the buyer's home shard, of the
	// item's Shards (at least 1).
	Shard, Shards int
	// Borrowed is how many units were moved into the home shard from other shards for this request.
	Borrowed int
	// Replicas is how many replicas acknowledged the reservation when WaitReplicas asked for it
	// (fewer than asked is not an error), -1 when no WAIT was issued.
	Replicas int
	// Epoch is the generation of the shard's state the reservation lives in (sale.Item.Epoch); its
	// OrderPlaced carries it, and the hand-off is confirmed only while the shard still has it
	// (Store.Epoch).
	Epoch int64
	// SaleLimited is set with ALREADY_PURCHASED when the per-sale limit, not the item's, refused.
	SaleLimited bool
	// Claimed is set when the order holds one of its buyer's per-sale slots: SaleSlot.
	Claimed  bool
	SaleSlot int
	// RefErr is set when the order's reference for lookups by id could not be written (on a
	// Redis Cluster it lives on another master, which may be down). The reservation stands:
	// GET /orders/{id} answers from PostgreSQL once the order is there.
	RefErr error
}

// Reserve runs one purchase attempt. An unsharded item takes one script call. A sharded one first
// reserves in the buyer's home shard; when that shard is empty it moves units in from the other
// shards (starting at one the order id picks) and reserves again, every check repeated in the step
// that reserves, so borrowing can never break the per-user limit. When no shard has a unit left, a
// last call remembers SOLD_OUT under the idempotency key.
func (s *Store) Reserve(ctx context.Context, r Request) (Reservation, error) {
	if r.SaleLimit < 0 || r.SaleLimit > sale.MaxPerSaleLimit {
		return Reservation{}, outcome.Errorf(outcome.InvalidRequest, "per-sale limit %d: must be between 0 (none) and %d", r.SaleLimit, sale.MaxPerSaleLimit)
	}
	home := HomeShard(r.UserID, r.Shards)
	call, done, err := s.homeCaller(ctx, r, home)
	if err != nil {
		return Reservation{}, fmt.Errorf("reserve %s/%s: %w", r.SaleID, r.ItemID, err)
	}
	defer done()
	var rv Reservation
	if r.SaleLimit > 0 {
		rv, err = s.reserveClaimed(ctx, call, r, home)
	} else {
		rv, err = s.reserveSharded(ctx, call, r, home)
	}
	if err != nil {
		return Reservation{}, fmt.Errorf("reserve %s/%s: %w", r.SaleID, r.ItemID, err)
	}
	return rv, nil
}

func (s *Store) reserveSharded(ctx context.Context, call homeCall, r Request, home int) (Reservation, error) {
	rv, err := s.reserveOnce(ctx, call, r, home, r.Shards > 1 && !r.NoBorrow, "", 0)
	if err != nil || rv.Outcome != empty {
		return rv, err
	}
	n := r.Shards
	first := int(binary.BigEndian.Uint32(r.OrderID[12:]) % uint32(n-1))
	borrowed := 0
	// A shard that cannot be reached (its Redis Cluster master is down) is skipped: the others may
	// still have units. It may hold some too, so if no shard gives one the answer is its error, a
	// retry, never SOLD_OUT. A transfer whose answer was lost stays in its ledger for
	// RepairTransfers, so skipping it loses nothing.
	var unreachable error
	for i := range n - 1 {
		from := (home + 1 + (first+i)%(n-1)) % n
		id, got, err := s.moveOut(ctx, r.SaleID, r.ItemID, from, home, r.Shards)
		if err != nil {
			if ctx.Err() != nil {
				return Reservation{}, err
			}
			unreachable = err
			continue
		}
		if got == 0 {
			continue
		}
		borrowed += int(got)
		// On an error the ledger entry stays, and RepairTransfers applies it unless this call did.
		rv, err = s.reserveOnce(ctx, call, r, home, true, id, got)
		if err != nil {
			return Reservation{}, err
		}
		// The units are in the home shard now. An entry this fails to delete is harmless: Snapshot
		// sees it applied, and RepairTransfers deletes it.
		_ = s.rdb.HDel(ctx, ShardKeys(r.SaleID, r.ItemID, from, r.Shards).Ledger(), id).Err()
		if rv.Outcome != empty {
			rv.Borrowed = borrowed
			return rv, nil
		}
	}
	if unreachable != nil {
		return Reservation{}, unreachable
	}
	rv, err = s.reserveOnce(ctx, call, r, home, false, "", 0)
	rv.Borrowed = borrowed
	return rv, err
}

// reserveOnce runs the reserve script on the home shard, applying an incoming transfer when id is set.
func (s *Store) reserveOnce(ctx context.Context, call homeCall, r Request, home int, sharded bool, id string, units int64) (Reservation, error) {
	rk := s.reserveKeysOf(r.SaleID, r.ItemID, home, r.Shards)
	flag := "0"
	if sharded {
		flag = "1"
	}
	orderID := r.OrderID.String()
	nkeys, nargs := reserveSharedKeys+1, reserveSharedArgs+5
	if s.refInScript {
		nkeys, nargs = nkeys+1, nargs+1
	}
	c := append(newScriptCall(s.reserveSHA, nkeys, nargs), rk.keys[:]...)
	c = append(c, rk.k.Idem(r.UserID, r.IdemKey))
	refTTL := any("")
	if s.refInScript {
		c = append(c, orderRefPrefix+orderID)
		refTTL = s.markerTTLArg
	}
	c = append(c, s.idemTTLArg, id, units, refTTL, r.UserID, orderID, flag, r.IdemKey, r.saleSlot)
	if s.refInScript {
		c = append(c, orderRef(r.SaleID, r.ItemID, r.UserID, home, max(r.Shards, 1)))
	}
	res, replicas, err := call(ctx, c)
	if err != nil {
		return Reservation{}, resharding(err, home)
	}
	rv, err := parseReservation(res)
	rv.Shard, rv.Shards, rv.Replicas = home, max(r.Shards, 1), replicas
	if err == nil && rv.Outcome == outcome.Reserved && !s.refInScript {
		// A replay rewrites it too: the first request may have died between the script and this.
		// The reference (keyed by order id, so on any master of a cluster) only serves lookups
		// of an order PostgreSQL does not have yet; the unit is held whatever becomes of it, so
		// failing to write it must not turn a reservation into an error.
		rv.RefErr = s.SetOrderRef(ctx, rv.OrderID, r.SaleID, r.ItemID, r.UserID, home, max(r.Shards, 1))
	}
	return rv, err
}

// moveOut takes up to the store's transfer batch out of shard from, on its way to shard to.
func (s *Store) moveOut(ctx context.Context, saleID, itemID string, from, to, shards int) (string, int64, error) {
	k := ShardKeys(saleID, itemID, from, shards)
	res, err := s.eval(ctx, s.transferOut, []string{k.Stock(), k.Ledger(), k.TransferSeq()},
		s.transferBatch, to, from).StringSlice()
	if err != nil {
		return "", 0, fmt.Errorf("transfer out of shard %d: %w", from, resharding(err, from))
	}
	if len(res) != 2 {
		return "", 0, fmt.Errorf("transfer_out script answered %d fields, want 2", len(res))
	}
	n, err := strconv.ParseInt(res[0], 10, 64)
	if err != nil {
		return "", 0, fmt.Errorf("transfer_out script answered count %q: %w", res[0], err)
	}
	return res[1], n, nil
}

// homeCall runs the reserve script on the buyer's home shard and says how many replicas
// acknowledged a fresh reservation (-1 when it did not wait).
type homeCall func(ctx context.Context, c scriptCall) (string, int, error)

func noCleanUp() {}

// homeCaller picks how the home shard's reserve calls run. Without replica waits they go through
// the store's client. With them, WAIT must follow the script on the same connection, since it
// counts the acknowledgements of that connection's writes: a *redis.Client (or the master of the
// home shard's slot on a *redis.ClusterClient) lends one connection for the whole request. Any other
// UniversalClient gets EVALSHA and WAIT in one pipeline, which only keeps them on one connection
// where the client does (a Ring routes the keyless WAIT by its own rules).
func (s *Store) homeCaller(ctx context.Context, r Request, home int) (homeCall, func(), error) {
	if r.WaitReplicas <= 0 {
		return s.plainHome, noCleanUp, nil
	}
	k := s.reserveKeysOf(r.SaleID, r.ItemID, home, r.Shards).k
	timeout := r.WaitTimeout
	if timeout <= 0 {
		timeout = sale.DefaultWaitTimeout // WAIT 0 would block forever
	}
	var node *redis.Client
	switch c := s.rdb.(type) {
	case *redis.Client:
		node = c
	case *redis.ClusterClient:
		m, err := c.MasterForKey(ctx, k.Stock())
		if err != nil {
			return nil, nil, fmt.Errorf("find the master of shard %s: %w", k.tag, err)
		}
		node = m
	}
	if node == nil {
		return func(ctx context.Context, c scriptCall) (string, int, error) {
			return s.reservePipelinedWait(ctx, c, r.WaitReplicas, timeout)
		}, noCleanUp, nil
	}
	conn := node.Conn()
	return func(ctx context.Context, c scriptCall) (string, int, error) {
		res, err := reserveAnswer(s.reserve.Run(ctx, conn, c.keys(), c.args()...))
		if err != nil || !freshReserved(res) {
			return res, -1, err
		}
		// The unit is reserved whatever WAIT says; a WAIT that fails confirms no replica.
		n, err := conn.Wait(ctx, r.WaitReplicas, timeout).Result()
		if err != nil {
			return res, 0, nil
		}
		return res, int(n), nil
	}, func() { _ = conn.Close() }, nil
}

func (s *Store) reservePipelinedWait(ctx context.Context, c scriptCall, replicas int, timeout time.Duration) (string, int, error) {
	for attempt := 0; ; attempt++ {
		pipe := s.rdb.Pipeline()
		ev := pipe.EvalSha(ctx, s.reserve.Hash(), c.keys(), c.args()...)
		// Pipeliner has no Wait; as a plain command WAIT gets the client's read timeout, not its own.
		wait := pipe.Do(ctx, "wait", replicas, timeout.Milliseconds())
		_, _ = pipe.Exec(ctx)
		if redis.HasErrorPrefix(ev.Err(), "NOSCRIPT") && attempt == 0 {
			if err := s.reserve.Load(ctx, s.rdb).Err(); err != nil {
				return "", -1, fmt.Errorf("load reserve script: %w", err)
			}
			continue
		}
		res, err := reserveAnswer(ev)
		if err != nil || !freshReserved(res) {
			return res, -1, err
		}
		n, _ := wait.Int() // a failed WAIT confirms no replica
		return res, n, nil
	}
}

func freshReserved(answer string) bool {
	f, ok := replyFields(answer)
	return ok && f[0] == string(outcome.Reserved) && f[4] == "0"
}

func parseReservation(answer string) (Reservation, error) {
	res, ok := replyFields(answer)
	if !ok {
		return Reservation{}, fmt.Errorf("reserve script answered %q, want 6 fields", answer)
	}
	rv := Reservation{Replay: res[4] == "1", Replicas: -1}
	switch c := outcome.Code(res[0]); c {
	case outcome.Reserved:
		rv.Outcome = c
	case outcome.SoldOut, outcome.AlreadyPurchased, outcome.NotStarted, outcome.Paused, empty:
		rv.Outcome = c
		return rv, nil
	case outcome.NotFound:
		return rv, outcome.Errorf(outcome.NotFound, "item is not on sale (not preloaded)")
	default:
		return Reservation{}, fmt.Errorf("reserve script answered unknown code %q", res[0])
	}
	id, err := uuid.Parse(res[1])
	if err != nil {
		return Reservation{}, fmt.Errorf("reserve script answered order id %q: %w", res[1], err)
	}
	ms, err := strconv.ParseInt(res[2], 10, 64)
	if err != nil {
		return Reservation{}, fmt.Errorf("reserve script answered expiry %q: %w", res[2], err)
	}
	slot, err := strconv.Atoi(res[3])
	if err != nil {
		return Reservation{}, fmt.Errorf("reserve script answered slot %q: %w", res[3], err)
	}
	epoch, err := strconv.ParseInt(res[5], 10, 64)
	if err != nil {
		return Reservation{}, fmt.Errorf("reserve script answered epoch %q: %w", res[5], err)
	}
	rv.OrderID, rv.ExpiresAt, rv.Slot, rv.Epoch = id, time.UnixMilli(ms).UTC(), slot, epoch
	return rv, nil
}

// replyFields splits the reserve script's answer, "code|orderId|expiresAtMs|slot|replay|epoch",
// into its six fields (views of answer, nothing copied); false when it has another count.
func replyFields(answer string) (f [6]string, ok bool) {
	for i := range 5 {
		var found bool
		if f[i], answer, found = strings.Cut(answer, "|"); !found {
			return f, false
		}
	}
	f[5] = answer
	return f, !strings.Contains(answer, "|")
}

// reserveKeys are the keys of one shard that every reserve touches (the script's KEYS[1..6]), built
// once per shard and boxed as its call line takes them.
type reserveKeys struct {
	k    Keys
	keys [reserveSharedKeys]any
}

type shardID struct {
	saleID, itemID string
	shard, shards  int
}

// maxCachedShards bounds the key cache; past it the cache starts again (sales come and go).
const maxCachedShards = 4096

func (s *Store) reserveKeysOf(saleID, itemID string, shard, shards int) *reserveKeys {
	id := shardID{saleID, itemID, shard, shards}
	s.keysMu.RLock()
	rk := s.keys[id]
	s.keysMu.RUnlock()
	if rk != nil {
		return rk
	}
	k := ShardKeys(saleID, itemID, shard, shards)
	rk = &reserveKeys{k: k, keys: [reserveSharedKeys]any{k.Meta(), k.Stock(), k.Buyers(), k.Holds(), k.Orders(), k.Applied()}}
	s.keysMu.Lock()
	if len(s.keys) >= maxCachedShards {
		clear(s.keys)
	}
	s.keys[id] = rk
	s.keysMu.Unlock()
	return rk
}

// resharding says what a TRYAGAIN means: the shard's slot is moving between two masters and its
// keys are split over both for the moment, so the script ran nowhere. Other errors pass as they are.
// MOVED and ASK that outlast the client's redirects mean the same: the slot is on its way to the
// node they name.
func resharding(err error, shard int) error {
	switch {
	case redis.HasErrorPrefix(err, "TRYAGAIN"):
		return fmt.Errorf("shard %d: its slot is being moved between masters (a resharding), nothing ran; retry: %w", shard, err)
	case redis.HasErrorPrefix(err, "MOVED"), redis.HasErrorPrefix(err, "ASK"):
		to := ""
		if f := strings.Fields(err.Error()); len(f) == 3 {
			to = " to " + f[2]
		}
		return fmt.Errorf("shard %d: its slot moved%s (a resharding) faster than the client followed, nothing ran; retry: %w", shard, to, err)
	}
	return err
}
