// Package skew measures this machine's clock against another one: a server's, from the time its
// HTTP answer carries, or any clock read in one round trip (Redis TIME, PostgreSQL now()). blast
// refuses to release on a skewed clock and preflight reports every clock it can read; both
// measure here.
package skew

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"time"
)

// Skew is this machine's clock against another one, from one reading.
type Skew struct {
	// Offset is local minus remote time: positive when this machine runs ahead, so its buyers
	// would go early by the server's clock.
	Offset time.Duration
	// RTT is the round trip of the reading; the offset is uncertain by half of it.
	RTT time.Duration
	// Source says where the server's time came from: the sale page's serverTime or, at one
	// second's resolution, the Date header.
	Source string
	// Resolution is how finely the remote clock was read: 0, or a second for the Date header,
	// which widens the uncertainty by half of it.
	Resolution time.Duration
}

// Between is the skew of a clock read as remote by a request sent at sent and answered at got,
// both by this machine's clock: the remote time is taken as the middle of the round trip.
func Between(sent, got, remote time.Time) Skew {
	rtt := got.Sub(sent)
	return Skew{Offset: sent.Add(rtt / 2).Sub(remote), RTT: rtt}
}

// Measure reads the server's time from url (its JSON serverTime, else the answer's Date header)
// and compares it with now at the middle of the round trip.
func Measure(ctx context.Context, client *http.Client, url string, now func() time.Time) (Skew, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return Skew{}, err
	}
	sent := now()
	resp, err := client.Do(req)
	if err != nil {
		return Skew{}, fmt.Errorf("measure clock skew: %w", err)
	}
	got := now()
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	var page struct {
		ServerTime time.Time `json:"serverTime"`
	}
	if json.Unmarshal(body, &page) == nil && !page.ServerTime.IsZero() {
		s := Between(sent, got, page.ServerTime)
		s.Source = "serverTime"
		return s, nil
	}
	date, err := http.ParseTime(resp.Header.Get("Date"))
	if err != nil {
		return Skew{}, fmt.Errorf("measure clock skew: GET %s gave neither a serverTime nor a Date header", url)
	}
	// Date is truncated to the second: its middle is the best guess.
	s := Between(sent, got, date.Add(time.Second/2))
	s.Source, s.Resolution = "Date header (±0.5s)", time.Second
	return s, nil
}

// Best reads a clock n times and keeps the reading with the shortest round trip, as NTP does:
// its middle is the tightest bound. The first failed reading is the answer.
func Best(n int, read func() (Skew, error)) (Skew, error) {
	var out Skew
	for i := range n {
		s, err := read()
		if err != nil {
			return Skew{}, err
		}
		if i == 0 || s.RTT < out.RTT {
			out = s
		}
	}
	return out, nil
}

// Least is the smallest offset the reading allows: Offset less the half of Resolution the remote
// clock may really have been on the other side, 0 when that spans both sides. A clock known only to
// the second is then never called skewed for the second it cannot see.
func (s Skew) Least() time.Duration {
	half := s.Resolution / 2
	switch {
	case s.Offset > half:
		return s.Offset - half
	case s.Offset < -half:
		return s.Offset + half
	}
	return 0
}

// Bound is how far the true offset may lie from Offset: half the round trip and half the
// resolution.
func (s Skew) Bound() time.Duration { return s.RTT/2 + s.Resolution/2 }

// Check refuses a skew beyond limit: with a shared --at, a machine whose clock is off releases
// its buyers early or late by that much, and the report would blame the server. It judges the
// least offset the reading allows, so a server whose clock is read to the second (a Date header)
// is not refused for the half second it cannot show.
func (s Skew) Check(limit time.Duration) error {
	if s.Least().Abs() <= limit {
		return nil
	}
	dir := "ahead of"
	if s.Offset < 0 {
		dir = "behind"
	}
	return fmt.Errorf("clock skew: this machine is %s %s the server (from its %s, round trip %s), over --max-skew %s: "+
		"sync the clock (NTP) or raise --max-skew", s.Offset.Abs().Round(time.Microsecond), dir, s.Source,
		s.RTT.Round(time.Microsecond), limit)
}

// String is the skew as blast's report prints it.
func (s Skew) String() string {
	return fmt.Sprintf("clock skew %+.1fms against the server (local minus server, from its %s, round trip %s)",
		float64(s.Offset)/float64(time.Millisecond), s.Source, s.RTT.Round(time.Microsecond))
}
