package stock

import (
	"strconv"

	"github.com/google/uuid"

	"github.com/fsctl/fsctl/internal/platform/redisconn"
)

// Keys names the Redis keys of one shard of one item of one sale. Every key carries the same hash
// tag, so one Lua script can touch them all on a Redis Cluster: {fs:<sale>:<item>} for shard 0 (an
// unsharded item is just its shard 0) and {fs:<sale>:<item>:<k>} for shard k ≥ 1. A sharded item's
// tags are salted by redisconn.SpreadTag ({fs:<sale>:<item>:<k>~<salt>}, unless the plain tag
// already lands there), so that its shards spread over the slot space, and so over a cluster's
// masters, instead of wherever the names happen to hash.
type Keys struct{ tag string }

// ItemKeys returns the key set of an unsharded item.
func ItemKeys(saleID, itemID string) Keys { return ShardKeys(saleID, itemID, 0, 1) }

// ShardKeys returns the key set of shard k of an item split into n shards (sale.Item.ShardCount();
// n ≤ 1 is an unsharded item). Sale and item ids are slugs, so they cannot contain the braces,
// colons or tildes that would change the hash tag.
func ShardKeys(saleID, itemID string, k, n int) Keys {
	if k <= 0 {
		return Keys{tag: redisconn.SpreadTag("{fs:"+saleID+":"+itemID+"}", 0, n)}
	}
	return Keys{tag: redisconn.SpreadTag("{fs:"+saleID+":"+itemID+":"+strconv.Itoa(k)+"}", k, n)}
}

// HomeShard is the shard that holds everything about a buyer for an item (buyer record, holds,
// orders, idempotency records): FNV-1a 32 of the user id modulo shards, 0 when shards ≤ 1.
func HomeShard(userID string, shards int) int {
	if shards <= 1 {
		return 0
	}
	h := uint32(2166136261)
	for i := 0; i < len(userID); i++ {
		h ^= uint32(userID[i])
		h *= 16777619
	}
	// FNV-1a's low bits depend only on the low bits of each byte, so "user1" and "user5" would
	// always share a shard modulo a power of two; murmur3's finalizer spreads every bit first.
	h ^= h >> 16
	h *= 0x85ebca6b
	h ^= h >> 13
	h *= 0xc2b2ae35
	h ^= h >> 16
	return int(h % uint32(shards))
}

// Meta is a hash of the sale settings the reserve script enforces (opening time, pause flag,
// per-user limit, hold TTL) plus the shard's quantity and the item's shard count, copied per shard
// so they share the shard's slot.
func (k Keys) Meta() string { return k.tag + ":meta" }

// Stock is the remaining-units counter of the shard.
func (k Keys) Stock() string { return k.tag + ":stock" }

// Buyers is a hash from user id to the bitmask of the per-user-limit slots the user holds.
func (k Keys) Buyers() string { return k.tag + ":buyers" }

// Holds is a sorted set of live (unreleased, unpaid) order ids scored by hold expiry in Unix
// milliseconds, so a sweeper can scan it by time.
func (k Keys) Holds() string { return k.tag + ":holds" }

// Orders is a hash from order id to "user\nslot\nidemKey" for every held or paid order: what a
// release needs to undo a reserve, and what a sweeper needs to re-publish it.
func (k Keys) Orders() string { return k.tag + ":orders" }

// Idem is the record of the first final answer given to (user, Idempotency-Key). The user id is
// length-prefixed so that no (user, key) pair can collide with another one.
func (k Keys) Idem(userID, key string) string {
	return k.idemPrefix() + strconv.Itoa(len(userID)) + ":" + userID + ":" + key
}

func (k Keys) idemPrefix() string { return k.tag + ":idem:" }

// Released marks an order that left its hold, with the order's final status (PAID, or the status a
// release recorded), so a buyer polling an order that never reached PostgreSQL learns what became of it.
func (k Keys) Released(orderID uuid.UUID) string { return k.tag + releasedInfix + orderID.String() }

const releasedInfix = ":released:"

// Handed marks an order whose hand-off was confirmed (lua/confirm.lua): its buyer was told
// RESERVED, so a failed concurrent hand-off of the same purchase must not release it.
func (k Keys) Handed(orderID uuid.UUID) string { return k.tag + ":handed:" + orderID.String() }

// Ledger is a hash from transfer id to "toShard\ncount\nms": units taken out of this shard on their
// way to another one, until the target has applied them and the entry is deleted.
func (k Keys) Ledger() string { return k.tag + ":ledger" }

// Applied is the set of transfer ids applied into this shard, so a transfer moves its units once
// however many times reserve and repair see it.
func (k Keys) Applied() string { return k.tag + ":applied" }

// TransferSeq numbers the transfers out of this shard, so transfer ids are unique without a clock or
// a random source.
func (k Keys) TransferSeq() string { return k.tag + ":xferseq" }

// OrderRefKey points from an order id to its sale, item, user and shard, so GET /orders/{id} can find
// the hold of an order that PostgreSQL does not have yet.
func OrderRefKey(orderID uuid.UUID) string { return orderRefPrefix + orderID.String() }

const orderRefPrefix = "fs:order:"
