package server

import (
	"fmt"
	"os"
	"sync/atomic"
)

// EnvCrashAfterReserve is the variable `fsctl serve` reads Config.CrashAfterReserve from, so a game
// day arms the fault in the processes it starts without a flag a production run could pass by
// mistake.
const EnvCrashAfterReserve = "FSCTL_FAULT_CRASH_AFTER_RESERVE"

// crashHook counts fresh reservations and ends the process at the armed one: the crash between
// reserve and publish that a game day injects. The buyer's retry with the same key then gets the
// reservation from another instance, and the orphaned-hold sweeper must still bring the order to
// PostgreSQL. Disarmed (the normal case) it costs one comparison.
type crashHook struct {
	after int64 // 0: disarmed
	seen  atomic.Int64
	exit  func(code int)
}

func newCrashHook(after int, exit func(int)) *crashHook {
	return &crashHook{after: int64(max(after, 0)), exit: exit}
}

// reserved is called once per fresh reservation, before its hand-off.
func (h *crashHook) reserved() {
	if h.after == 0 {
		return
	}
	if h.seen.Add(1) == h.after {
		fmt.Fprintf(os.Stderr, "fault injected (%s=%d): exiting between reserve and publish\n", EnvCrashAfterReserve, h.after)
		h.exit(137)
	}
}
