package durations

import (
	"testing"
	"time"
)

func TestMsRoundTrips(t *testing.T) {
	for _, d := range []time.Duration{0, time.Microsecond, 1234567 * time.Microsecond, 90 * time.Minute, -3 * time.Millisecond} {
		if got := FromMs(Ms(d)); got != d {
			t.Errorf("FromMs(Ms(%s)) = %s", d, got)
		}
	}
	if b, err := MarshalMs(struct{}{}, Field("took", new(time.Duration))); err != nil || string(b) != `{"tookMs":0}` {
		t.Errorf("an empty object: %s, %v", b, err)
	}
	if _, err := MarshalMs([]int{1}); err == nil {
		t.Error("MarshalMs of an array: no error")
	}
}
