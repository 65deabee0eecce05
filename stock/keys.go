package stock

import (
	"strconv"

	"github.com/google/uuid"
)

// Keys names the Redis keys of one item of one sale. Every key carries the same hash tag
// {fs:<sale>:<item>}, so one Lua script can touch them all on a Redis Cluster.
type Keys struct{ tag string }

// ItemKeys returns the key set of an item. Sale and item ids are slugs, so they cannot contain
// the braces that would change the hash tag.
func ItemKeys(saleID, itemID string) Keys {
	return Keys{tag: "{fs:" + saleID + ":" + itemID + "}"}
}

// Meta is a hash of the sale settings the reserve script enforces (opening time, pause flag,
// per-user limit, hold TTL), copied per item so they share the item's slot.
func (k Keys) Meta() string { return k.tag + ":meta" }

// Stock is the remaining-units counter.
func (k Keys) Stock() string { return k.tag + ":stock" }

// Buyers is a hash from user id to the bitmask of the per-user-limit slots the user holds.
func (k Keys) Buyers() string { return k.tag + ":buyers" }

// Holds is a sorted set of live (unreleased) order ids scored by hold expiry in Unix milliseconds,
// so a sweeper can scan it by time.
func (k Keys) Holds() string { return k.tag + ":holds" }

// Orders is a hash from live order id to "user\nslot", what a release needs to undo a reserve.
func (k Keys) Orders() string { return k.tag + ":orders" }

// Idem is the record of the first final answer given to (user, Idempotency-Key). The user id is
// length-prefixed so that no (user, key) pair can collide with another one.
func (k Keys) Idem(userID, key string) string {
	return k.tag + ":idem:" + strconv.Itoa(len(userID)) + ":" + userID + ":" + key
}

// Released marks an order whose unit went back to stock, with the order's final status, so a buyer
// polling an order that never reached PostgreSQL learns what became of it.
func (k Keys) Released(orderID uuid.UUID) string { return k.tag + ":released:" + orderID.String() }

// OrderRefKey points from an order id to its sale and item, so GET /orders/{id} can find the hold
// of an order that PostgreSQL does not have yet.
func OrderRefKey(orderID uuid.UUID) string { return "fs:order:" + orderID.String() }
