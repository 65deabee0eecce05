package server

import (
	"fmt"
	"os"
	"strconv"
	"sync/atomic"
)

// EnvCrashAfterReserve, set to N > 0, makes the process exit with status 137 (as if SIGKILLed)
// right after its Nth fresh reservation, before the order reference is written or OrderPlaced is
// published: the crash between reserve and publish that a game day injects. The buyer's retry
// with the same key then gets the reservation from another instance, and the orphaned-hold
// sweeper must still bring the order to PostgreSQL. Unset (the normal case) it costs one atomic load.
const EnvCrashAfterReserve = "FSCTL_FAULT_CRASH_AFTER_RESERVE"

// crashHook counts fresh reservations and ends the process at the armed one. It is process-wide
// on purpose: the fault is the process dying, and it is armed only by the environment the game day
// starts the process with.
type crashHook struct {
	after int64 // 0: disarmed
	seen  atomic.Int64
	exit  func(code int)
}

func newCrashHook(env string, exit func(int)) *crashHook {
	n, err := strconv.ParseInt(env, 10, 64)
	if err != nil || n <= 0 {
		return &crashHook{exit: exit}
	}
	return &crashHook{after: n, exit: exit}
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

var crashAfterReserve = newCrashHook(os.Getenv(EnvCrashAfterReserve), os.Exit)
