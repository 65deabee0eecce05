// Package lua embeds the Redis scripts of the reservation core, so the binary carries exactly the
// scripts it was tested with. The stock package loads and runs them.
package lua

import _ "embed"

// Reserve is the atomic reservation script on one shard, for one purchase attempt or several taken
// in order: an incoming transfer, idempotency, sale flags, per-user limit, stock, hold.
//
//go:embed reserve.lua
var Reserve string

// Release returns one live, unpaid hold's unit to stock exactly once.
//
//go:embed release.lua
var Release string

// Confirm checks, after a hand-off reached Kafka, that the order is still live on the state it was
// reserved on, and marks it handed off.
//
//go:embed confirm.lua
var Confirm string

// Settle turns a paid order's hold into a sold unit exactly once.
//
//go:embed settle.lua
var Settle string

// Preload writes a shard's settings and creates or adjusts its stock counter.
//
//go:embed preload.lua
var Preload string

// Reload overwrites a shard with a fresh counter and no holds, buyers or orders (a rebuild from
// PostgreSQL).
//
//go:embed reload.lua
var Reload string

// TransferOut takes units out of a shard into its transfer ledger, on their way to another shard.
//
//go:embed transfer_out.lua
var TransferOut string

// ApplyTransfer moves a ledger entry's units into its target shard exactly once.
//
//go:embed apply_transfer.lua
var ApplyTransfer string

// Restore puts an order PostgreSQL knows back into a shard's Redis state (reconcile's repairs).
//
//go:embed restore.lua
var Restore string

// Claim takes one of a buyer's per-sale slots for a purchase attempt, before the item's reserve.
//
//go:embed claim.lua
var Claim string

// Unclaim gives back, or re-points, the per-sale claim an order holds.
//
//go:embed unclaim.lua
var Unclaim string
