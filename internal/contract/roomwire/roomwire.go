// Package roomwire is the waiting room's protocol as a buyer's client sees it: the ticket statuses
// the queue answers with and the proof of work a challenge asks for. The server's room package and
// the load generators (blast, loadgen) share it, so a generator depends on the contract, not on
// the server's queue.
package roomwire

import (
	"context"
	"crypto/sha256"
	"fmt"
	"math/bits"
	"strconv"
)

// Status is where a ticket stands.
type Status string

// Ticket statuses, as joining and polling report them.
const (
	// StatusPrequeue: joined before a random-order opening; the place is drawn but not told until
	// the opening, because a position would leak the draw.
	StatusPrequeue Status = "prequeue"
	// StatusWaiting: in line, with a position.
	StatusWaiting Status = "waiting"
	// StatusAdmitted: may buy until the lease expires; each poll extends the lease.
	StatusAdmitted Status = "admitted"
	// StatusExpired: the holder stopped polling and lost the place or slot; joining again gives a
	// new ticket at the back.
	StatusExpired Status = "expired"
)

// MaxDifficulty is the most leading zero bits a challenge can ask for.
const MaxDifficulty = sha256.Size * 8

// Solve finds a decimal nonce for a challenge's value at difficulty, as a buyer's client does:
// SHA-256(value ":" nonce) must start with difficulty zero bits, about 2^difficulty hashes. It
// stops with ctx's error when ctx ends first.
func Solve(ctx context.Context, value string, difficulty int) (string, error) {
	if difficulty < 0 || difficulty > MaxDifficulty {
		return "", fmt.Errorf("solve: difficulty %d out of range 0..%d", difficulty, MaxDifficulty)
	}
	buf := make([]byte, 0, len(value)+1+20)
	buf = append(buf, value...)
	buf = append(buf, ':')
	prefix := len(buf)
	for n := uint64(0); ; n++ {
		if n%4096 == 0 {
			if err := ctx.Err(); err != nil {
				return "", fmt.Errorf("solve: %w", err)
			}
		}
		buf = strconv.AppendUint(buf[:prefix], n, 10)
		if sum := sha256.Sum256(buf); LeadingZeroBits(sum[:]) >= difficulty {
			return string(buf[prefix:]), nil
		}
	}
}

// LeadingZeroBits counts the zero bits at the start of b.
func LeadingZeroBits(b []byte) int {
	n := 0
	for _, x := range b {
		if x != 0 {
			return n + bits.LeadingZeros8(x)
		}
		n += 8
	}
	return n
}
