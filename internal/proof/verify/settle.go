package verify

import (
	"context"
	"time"
)

// Poll is how often Settle reads again by default.
const Poll = 200 * time.Millisecond

// Settle reads until the sale has nothing left to wait for or wait has passed, every poll (Poll
// when 0), and returns what the last read still waited for: empty means it settled. read lists
// what the sale still waits for (orders on their way, a consumer's lag, counters that disagree).
// Every wait for a sale to settle is this one, so a bound means the same in every command.
func Settle(ctx context.Context, wait, poll time.Duration, read func(context.Context) ([]string, error)) ([]string, error) {
	if poll <= 0 {
		poll = Poll
	}
	deadline := time.Now().Add(wait)
	for {
		waiting, err := read(ctx)
		if err != nil || len(waiting) == 0 || !time.Now().Before(deadline) {
			return waiting, err
		}
		t := time.NewTimer(min(poll, time.Until(deadline)))
		select {
		case <-ctx.Done():
			t.Stop()
			return waiting, ctx.Err()
		case <-t.C:
		}
	}
}
