package stock

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"

	"github.com/fsctl/fsctl/internal/contract/outcome"
	"github.com/fsctl/fsctl/internal/contract/sale"
	"github.com/fsctl/fsctl/internal/platform/redisconn"
)

// A per-sale limit ("one per user per sale") spans items, and a sale's items live on different hash
// tags, on a Redis Cluster on different masters: no one script can see them all. So the limit is a
// claim on a key of its own, taken before the item's reserve (lua/claim.lua):
//
//  1. claim: the buyer takes the lowest free of their per-sale slots for this attempt (sale, item,
//     Idempotency-Key), naming the attempt's candidate order id; no free slot is ALREADY_PURCHASED,
//     and the reserve never runs. A retry of the same attempt finds its claim again.
//  2. reserve: the item's script as always; the order's record in the item's shard keeps the claim
//     slot, so everything that releases the order knows it held one.
//  3. an attempt that did not reserve gives a claim it took back at once; a release of the order
//     (expiry, cancellation, a failed payment or hand-off, a refusal by PostgreSQL) gives it back
//     after the release script (Store.Release). A reserve that replayed an earlier reservation
//     under another order id re-points the claim to it.
//
// What a crash leaves between these steps errs on the buyer's side of the limit only: a claim
// without a live order (the process died between claim and reserve, or between release and give
// back) keeps the buyer from buying, never lets them buy more. SweepClaims gives such claims back
// once they are older than any purchase can take. PostgreSQL backs the limit up: each order
// carries its claim slot (orders.sale_slot), under a partial unique index over the buyer's live
// orders of the sale (migration 00010), so a claim lost with a Redis node cannot sell a second unit.

// ClaimBuckets is how many hashes a sale's claims are spread over. Each bucket has its own hash tag,
// salted (redisconn.SpreadTag) so the buckets spread over a cluster's masters: claim traffic, which
// every purchase of a limited sale adds, is not one hot key.
const ClaimBuckets = 64

// ClaimKey is the bucket hash that holds a buyer's per-sale claims: {fs:<sale>:claims:<b>} with b
// the buyer's bucket.
func ClaimKey(saleID, userID string) string {
	return claimBucketKey(saleID, claimBucket(userID))
}

func claimBucketKey(saleID string, b int) string {
	return redisconn.SpreadTag("{fs:"+saleID+":claims:"+strconv.Itoa(b)+"}", b, ClaimBuckets)
}

// claimBucket is the buyer's bucket: the same FNV-1a and finalizer as HomeShard, so it depends on
// every byte of the user id.
func claimBucket(userID string) int { return HomeShard(userID, ClaimBuckets) }

// claimField is the buyer's field in the bucket, length-prefixed like an idempotency record's name.
func claimField(userID string) string { return strconv.Itoa(len(userID)) + ":" + userID }

// Claim is one per-sale slot a buyer holds.
type Claim struct {
	UserID  string
	Slot    int
	ItemID  string
	IdemKey string
	OrderID uuid.UUID
	// At is when the claim was taken (Redis time).
	At time.Time
}

// claimAnswer is claim.lua's answer.
type claimAnswer struct {
	full  bool // the buyer's per-sale slots are all taken
	fresh bool // taken by this call (else a retry found the attempt's claim)
	slot  int
	order uuid.UUID // the order the claim names
}

// claim takes a per-sale slot for the attempt r (lua/claim.lua).
func (s *Store) claim(ctx context.Context, r Request) (claimAnswer, error) {
	res, err := s.eval(ctx, s.claimer, []string{ClaimKey(r.SaleID, r.UserID)},
		claimField(r.UserID), r.SaleLimit, r.ItemID, r.IdemKey, r.OrderID.String()).StringSlice()
	if err != nil {
		return claimAnswer{}, fmt.Errorf("claim a per-sale slot: %w", err)
	}
	if len(res) != 3 {
		return claimAnswer{}, fmt.Errorf("claim script answered %d fields, want 3", len(res))
	}
	switch res[0] {
	case "FULL":
		return claimAnswer{full: true}, nil
	case "NEW", "HAVE":
	default:
		return claimAnswer{}, fmt.Errorf("claim script answered unknown code %q", res[0])
	}
	slot, err := strconv.Atoi(res[1])
	if err != nil {
		return claimAnswer{}, fmt.Errorf("claim script answered slot %q: %w", res[1], err)
	}
	id, err := uuid.Parse(res[2])
	if err != nil {
		return claimAnswer{}, fmt.Errorf("claim script answered order id %q: %w", res[2], err)
	}
	return claimAnswer{fresh: res[0] == "NEW", slot: slot, order: id}, nil
}

// unclaim gives back the claim that order holds, or re-points it to another order (to != uuid.Nil).
// It reports whether a claim of that order was there.
func (s *Store) unclaim(ctx context.Context, saleID, userID string, order, to uuid.UUID) (bool, error) {
	next := ""
	if to != uuid.Nil {
		next = to.String()
	}
	n, err := s.eval(ctx, s.unclaimer, []string{ClaimKey(saleID, userID)}, claimField(userID), order.String(), next).Int()
	if err != nil {
		return false, fmt.Errorf("give back the per-sale claim of order %s: %w", order, err)
	}
	return n == 1, nil
}

// reserveClaimed is Reserve for a sale with a per-sale limit: claim, reserve, then settle the claim
// with the answer. An attempt whose reserve failed with an error keeps its claim: the reserve may
// have run, and the sweeper gives the claim back if no order holds it.
func (s *Store) reserveClaimed(ctx context.Context, call homeCall, r Request, home int) (Reservation, error) {
	c, err := s.claim(ctx, r)
	if err != nil {
		return Reservation{}, err
	}
	if c.full {
		return Reservation{Outcome: outcome.AlreadyPurchased, SaleLimited: true, Shard: home, Shards: max(r.Shards, 1), Replicas: -1}, nil
	}
	r.saleSlot = strconv.Itoa(c.slot)
	rv, err := s.reserveSharded(ctx, call, r, home)
	if err != nil {
		if c.fresh && outcome.CodeOf(err) == outcome.NotFound {
			// The script ran and found the item not loaded (lost, or being rebuilt): nothing reserved.
			_, _ = s.unclaim(ctx, r.SaleID, r.UserID, c.order, uuid.Nil)
		}
		return rv, err
	}
	switch {
	case rv.Outcome != outcome.Reserved:
		if c.fresh {
			// Nothing reserved: the slot goes back now, not at the sweep. A failure leaves it to the sweeper.
			_, _ = s.unclaim(ctx, r.SaleID, r.UserID, c.order, uuid.Nil)
		}
		return rv, nil
	case rv.OrderID != c.order:
		// The reserve replayed an order of this attempt that the claim does not name. Either the
		// order has ended (expired, cancelled: its key still answers with it) and gave its claim
		// back then, so this claim goes back too; or the order lives and lost its claim (the
		// sweeper gave it back, or it was lost with its node), and the claim follows the order.
		// A failure leaves a claim the sweeper gives back; PostgreSQL's index still counts the order.
		k := ShardKeys(r.SaleID, r.ItemID, rv.Shard, rv.Shards)
		live, err := s.rdb.HExists(ctx, k.Orders(), rv.OrderID.String()).Result()
		if err == nil && !live {
			_, _ = s.unclaim(ctx, r.SaleID, r.UserID, c.order, uuid.Nil)
			return rv, nil
		}
		_, _ = s.unclaim(ctx, r.SaleID, r.UserID, c.order, rv.OrderID)
	}
	rv.Claimed, rv.SaleSlot = true, c.slot
	return rv, nil
}

// Claims lists a buyer's per-sale claims, in the order they were taken.
func (s *Store) Claims(ctx context.Context, saleID, userID string) ([]Claim, error) {
	v, err := s.rdb.HGet(ctx, ClaimKey(saleID, userID), claimField(userID)).Result()
	if errors.Is(err, redis.Nil) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read the per-sale claims of %s: %w", userID, err)
	}
	return parseClaims(userID, v)
}

// parseClaims reads a buyer's field: one "slot item idemKey orderId ms" line per claim.
func parseClaims(userID, v string) ([]Claim, error) {
	var out []Claim
	for _, line := range strings.Split(v, "\n") {
		if line == "" {
			continue
		}
		f := strings.Split(line, " ")
		if len(f) != 5 {
			return nil, fmt.Errorf("per-sale claim of %s: malformed line %q", userID, line)
		}
		slot, err1 := strconv.Atoi(f[0])
		id, err2 := uuid.Parse(f[3])
		ms, err3 := strconv.ParseInt(f[4], 10, 64)
		if err := errors.Join(err1, err2, err3); err != nil {
			return nil, fmt.Errorf("per-sale claim of %s: malformed line %q: %w", userID, line, err)
		}
		out = append(out, Claim{UserID: userID, Slot: slot, ItemID: f[1], IdemKey: f[2], OrderID: id, At: time.UnixMilli(ms).UTC()})
	}
	return out, nil
}

// SweepClaims gives back the per-sale claims of a sale that no live order holds: the claim is older
// than minAge (longer than any purchase takes between its claim and its reserve) and its order is
// not in its item's shard (never reserved, or released without giving the claim back). shards maps
// the sale's item ids to their shard counts; a claim on an item not in it is given back (the item
// left the sale). It returns how many it gave back.
func (s *Store) SweepClaims(ctx context.Context, saleID string, shards map[string]int, minAge time.Duration) (int, error) {
	now, err := s.rdb.Time(ctx).Result()
	if err != nil {
		return 0, fmt.Errorf("sweep per-sale claims of %s: %w", saleID, err)
	}
	freed := 0
	for b := range ClaimBuckets {
		var old []Claim
		err := s.scanClaims(ctx, claimBucketKey(saleID, b), func(c Claim) {
			if now.Sub(c.At) >= minAge {
				old = append(old, c)
			}
		})
		if err != nil {
			return freed, fmt.Errorf("sweep per-sale claims of %s: %w", saleID, err)
		}
		if len(old) == 0 {
			continue
		}
		live, err := s.liveOrders(ctx, saleID, shards, old)
		if err != nil {
			return freed, fmt.Errorf("sweep per-sale claims of %s: %w", saleID, err)
		}
		for i, c := range old {
			if live[i] {
				continue
			}
			ok, err := s.unclaim(ctx, saleID, c.UserID, c.OrderID, uuid.Nil)
			if err != nil {
				return freed, err
			}
			if ok {
				freed++
			}
		}
	}
	return freed, nil
}

// SaleClaims reads every per-sale claim of a sale, by the order each names.
func (s *Store) SaleClaims(ctx context.Context, saleID string) (map[uuid.UUID]Claim, error) {
	out := map[uuid.UUID]Claim{}
	for b := range ClaimBuckets {
		if err := s.scanClaims(ctx, claimBucketKey(saleID, b), func(c Claim) { out[c.OrderID] = c }); err != nil {
			return nil, fmt.Errorf("read the per-sale claims of %s: %w", saleID, err)
		}
	}
	return out, nil
}

// scanClaims calls fn with every claim in one bucket.
func (s *Store) scanClaims(ctx context.Context, key string, fn func(Claim)) error {
	var cursor uint64
	for {
		kv, next, err := s.rdb.HScan(ctx, key, cursor, "*", 500).Result()
		if err != nil {
			return err
		}
		for i := 0; i+1 < len(kv); i += 2 {
			_, user, ok := strings.Cut(kv[i], ":")
			if !ok {
				continue
			}
			cs, err := parseClaims(user, kv[i+1])
			if err != nil {
				return err
			}
			for _, c := range cs {
				fn(c)
			}
		}
		if next == 0 {
			return nil
		}
		cursor = next
	}
}

// liveOrders reports whether each claim's order has its record in its item's shard (held or paid).
func (s *Store) liveOrders(ctx context.Context, saleID string, shards map[string]int, cs []Claim) ([]bool, error) {
	out := make([]bool, len(cs))
	pipe := s.rdb.Pipeline()
	cmds := make([]*redis.BoolCmd, len(cs))
	for i, c := range cs {
		n, ok := shards[c.ItemID]
		if !ok {
			continue
		}
		k := ShardKeys(saleID, c.ItemID, HomeShard(c.UserID, n), n)
		cmds[i] = pipe.HExists(ctx, k.Orders(), c.OrderID.String())
	}
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return nil, err
	}
	for i, c := range cmds {
		out[i] = c != nil && c.Val()
	}
	return out, nil
}

// ResetClaims deletes every per-sale claim of a sale (a rebuild, which restores the claims of the
// live orders after it).
func (s *Store) ResetClaims(ctx context.Context, saleID string) error {
	// One DEL per bucket, in one pipeline: on a Redis Cluster the buckets live in different slots.
	pipe := s.rdb.Pipeline()
	for b := range ClaimBuckets {
		pipe.Del(ctx, claimBucketKey(saleID, b))
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return fmt.Errorf("reset the per-sale claims of %s: %w", saleID, err)
	}
	return nil
}

// dropClaims gives back the per-sale claims held on the given items of a sale (their keys were
// reset: no order of theirs is left in Redis). Claims on the sale's other items stay.
func (s *Store) dropClaims(ctx context.Context, sl sale.Sale) error {
	items := make(map[string]bool, len(sl.Items))
	for _, it := range sl.Items {
		items[it.ID] = true
	}
	claims, err := s.SaleClaims(ctx, sl.ID)
	if err != nil {
		return err
	}
	for _, c := range claims {
		if !items[c.ItemID] {
			continue
		}
		if _, err := s.unclaim(ctx, sl.ID, c.UserID, c.OrderID, uuid.Nil); err != nil {
			return err
		}
	}
	return nil
}

// RestoreClaim puts a live order's per-sale claim back (a rebuild of Redis from PostgreSQL): the
// buyer's slot names the order again. It reports whether anything changed; a slot another order
// holds is left alone (ErrSlotTaken).
func (s *Store) RestoreClaim(ctx context.Context, saleID string, c Claim) (bool, error) {
	res, err := s.rdb.Eval(ctx, restoreClaimScript, []string{ClaimKey(saleID, c.UserID)}, claimField(c.UserID),
		c.Slot, c.ItemID, c.IdemKey, c.OrderID.String()).Int()
	if err != nil {
		return false, fmt.Errorf("restore the per-sale claim of order %s: %w", c.OrderID, err)
	}
	if res == -1 {
		return false, ErrSlotTaken
	}
	return res == 1, nil
}

// restoreClaimScript writes one claim line unless the order's claim is there (0) or the slot is
// another order's (-1). It is a repair, rare enough to send its body each time.
const restoreClaimScript = `
local cur = redis.call('HGET', KEYS[1], ARGV[1]) or ''
for line in string.gmatch(cur, '[^\n]+') do
  local slot, oid = string.match(line, '^(%d+) %S+ %S+ (%S+) %d+$')
  if oid == ARGV[5] then
    return 0
  end
  if slot == ARGV[2] then
    return -1
  end
end
local t = redis.call('TIME')
local ms = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local key = ARGV[4]
if key == '' then
  key = '\127' -- no Idempotency-Key is DEL: no new attempt takes this claim for its own
end
local line = ARGV[2] .. ' ' .. ARGV[3] .. ' ' .. key .. ' ' .. ARGV[5] .. ' ' .. ms
if cur ~= '' then
  line = cur .. '\n' .. line
end
redis.call('HSET', KEYS[1], ARGV[1], line)
return 1
`
