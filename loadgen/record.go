package loadgen

import (
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	vegeta "github.com/tsenart/vegeta/v12/lib"

	"github.com/fsctl/fsctl/internal/contract/outcome"
)

// Record is one request of the burst: who sent it, when it was meant to go, when it really went,
// and what came back.
type Record struct {
	Buyer  int
	User   string
	Target Target
	Key    string
	// Click numbers the buyer's clicks from 1; Attempt numbers the tries of one key from 1
	// (retries after failures and replays after answers).
	Click, Attempt int
	// Intended is the release instant (the plan's At): latency is measured from it, so a request
	// that waited for a connection or a retry shows that wait (no coordinated omission).
	Intended time.Time
	// Started is when the attempt called the client, Written when the request was on the wire,
	// FirstByte when the answer began, Done when it was read; zero when it never happened.
	Started, Written, FirstByte, Done time.Time
	Method, URL                       string
	Status                            int
	Proto                             string
	BytesIn                           int
	Outcome                           outcome.Code
	OrderID                           string
	Error                             string
	// Conn is the local address of the connection the request went over.
	Conn string
	// RetryAfter is what the answer's Retry-After header asked for (0 when it had none; see
	// retryAfter).
	RetryAfter time.Duration
}

// Latency is the time from the intended release to the complete answer.
func (r Record) Latency() time.Duration { return r.Done.Sub(r.Intended) }

// Skew is how late the request was written after the intended release; -1 when never written.
func (r Record) Skew() time.Duration {
	if r.Written.IsZero() {
		return -1
	}
	return r.Written.Sub(r.Intended)
}

// Vegeta converts a record into vegeta's Result: Timestamp is the intended time, Latency counts
// from it, and Attack names the outcome so vegeta's reports can be split by it.
func (r Record) Vegeta(seq uint64) vegeta.Result {
	return vegeta.Result{
		Attack: string(r.Outcome), Seq: seq, Code: uint16(r.Status), Timestamp: r.Intended,
		Latency: r.Latency(), BytesIn: uint64(r.BytesIn), Error: r.Error, Method: r.Method, URL: r.URL,
	}
}

// WriteResults writes every record with vegeta's binary encoder, so `vegeta report` and
// `vegeta plot` read the file.
func WriteResults(w io.Writer, recs []Record) error {
	enc := vegeta.NewEncoder(w)
	for i, r := range recs {
		res := r.Vegeta(uint64(i))
		if err := enc.Encode(&res); err != nil {
			return fmt.Errorf("write result %d: %w", i, err)
		}
	}
	return nil
}

// retryAfter reads a Retry-After header, in seconds or as an HTTP date (measured from now): 0
// when it is absent or malformed, 1 ns when it asks for no wait at all (0 seconds, a date already
// past), so that 0 keeps meaning no header.
func retryAfter(h string, now time.Time) time.Duration {
	h = strings.TrimSpace(h)
	if h == "" {
		return 0
	}
	if secs, err := strconv.Atoi(h); err == nil && secs >= 0 {
		return max(time.Duration(secs)*time.Second, time.Nanosecond)
	}
	if t, err := http.ParseTime(h); err == nil {
		return max(t.Sub(now), time.Nanosecond)
	}
	return 0
}
