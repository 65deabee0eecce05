package loadgen

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Schedule is the open model: buyers arrive at Rate per second instead of all at one instant,
// the rate climbing linearly from 0 over Ramp first. Buyer k's intended time is fixed by k
// alone, so shards of one plan interleave on the same schedule.
type Schedule struct {
	Rate float64
	Ramp time.Duration
	// Offsets, when set, is every buyer's arrival after the start, in order (buyer k at
	// Offsets[k]), in place of Rate and Ramp: a mix of a trickle and bursts, as a chaos game day
	// draws it. Buyers past its end arrive with the last.
	Offsets []time.Duration
}

// ParseRate reads "N/s", "N/m" or a bare N (per second) into buyers per second.
func ParseRate(s string) (float64, error) {
	num, unit, _ := strings.Cut(s, "/")
	per := time.Second
	switch unit {
	case "", "s":
	case "m":
		per = time.Minute
	default:
		return 0, fmt.Errorf("rate %q: want N/s or N/m, e.g. 500/s", s)
	}
	n, err := strconv.ParseFloat(num, 64)
	if err != nil || n <= 0 || math.IsInf(n, 0) {
		return 0, fmt.Errorf("rate %q: want a positive number of buyers, e.g. 500/s", s)
	}
	return n / per.Seconds(), nil
}

// Validate reports a schedule that cannot release anyone.
func (s Schedule) Validate() error {
	if len(s.Offsets) > 0 {
		for k, d := range s.Offsets {
			if d < 0 || k > 0 && d < s.Offsets[k-1] {
				return fmt.Errorf("arrival %d at %s: arrivals must be non-negative and in order", k, d)
			}
		}
		return nil
	}
	if s.Rate <= 0 || math.IsInf(s.Rate, 0) || math.IsNaN(s.Rate) {
		return fmt.Errorf("rate %v: must be a positive number of buyers per second", s.Rate)
	}
	if s.Ramp < 0 {
		return errors.New("ramp cannot be negative")
	}
	return nil
}

// rampBuyers is how many buyers the ramp itself releases: the area under 0→Rate over Ramp.
func (s Schedule) rampBuyers() float64 { return s.Rate * s.Ramp.Seconds() / 2 }

// Offset is buyer k's intended time after the start: the instant the schedule's cumulative
// arrivals reach k (the first buyer goes at 0).
func (s Schedule) Offset(k int) time.Duration {
	if n := len(s.Offsets); n > 0 {
		return s.Offsets[min(max(k, 0), n-1)]
	}
	n := float64(k)
	var sec float64
	if r := s.rampBuyers(); n < r {
		// Arrivals during the ramp are Rate·t²/(2·Ramp); solve for t.
		sec = math.Sqrt(2 * n * s.Ramp.Seconds() / s.Rate)
	} else {
		sec = s.Ramp.Seconds() + (n-r)/s.Rate
	}
	return time.Duration(sec * float64(time.Second))
}

// Count is how many buyers the schedule releases within d: the --duration of a run.
func (s Schedule) Count(d time.Duration) int {
	if len(s.Offsets) > 0 {
		n, _ := slices.BinarySearch(s.Offsets, d+1)
		return n
	}
	t := d.Seconds()
	if ramp := s.Ramp.Seconds(); t < ramp {
		return int(math.Ceil(s.Rate * t * t / (2 * ramp)))
	}
	return int(math.Ceil(s.rampBuyers() + s.Rate*(t-s.Ramp.Seconds())))
}
