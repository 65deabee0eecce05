package loadgen

import (
	"testing"
	"time"
)

func TestScheduleOffsets(t *testing.T) {
	s := Schedule{Offsets: []time.Duration{0, 0, 500 * time.Millisecond, time.Second, time.Second}}
	if err := s.Validate(); err != nil {
		t.Fatalf("Validate: %v", err)
	}
	for k, want := range []time.Duration{0, 0, 500 * time.Millisecond, time.Second, time.Second, time.Second} {
		if got := s.Offset(k); got != want {
			t.Errorf("Offset(%d) = %s, want %s (past the end: the last arrival)", k, got, want)
		}
	}
	for d, want := range map[time.Duration]int{0: 2, 499 * time.Millisecond: 2, 500 * time.Millisecond: 3, time.Second: 5, time.Hour: 5} {
		if got := s.Count(d); got != want {
			t.Errorf("Count(%s) = %d, want %d", d, got, want)
		}
	}
	for _, bad := range [][]time.Duration{{time.Second, 0}, {-time.Millisecond}} {
		if err := (Schedule{Offsets: bad}).Validate(); err == nil {
			t.Errorf("Validate(%v) = nil, want an error (arrivals out of order or negative)", bad)
		}
	}
}
