// Package lua embeds the Redis scripts of the reservation core, so the binary carries exactly the
// scripts it was tested with. The stock package loads and runs them.
package lua

import _ "embed"

// Reserve is the atomic reservation script: idempotency, sale flags, per-user limit, stock, hold.
//
//go:embed reserve.lua
var Reserve string

// Release returns one hold's unit to stock exactly once.
//
//go:embed release.lua
var Release string

// Preload writes an item's settings and creates or adjusts its stock counter.
//
//go:embed preload.lua
var Preload string
