package loadgen

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestClickKeyIsTheKeyFormat: the Idempotency-Key put together by hand is the USER-AT-cCLICK it
// always was (a rerun's keys, a shard's keys and blast merge's pairing depend on it), for a long
// user, a release before 1970 (UnixNano negative) and a zero plan time.
func TestClickKeyIsTheKeyFormat(t *testing.T) {
	for _, user := range []string{"buyer-0000001", "", strings.Repeat("u", 100)} {
		for _, at := range []time.Time{time.Date(2026, 12, 5, 20, 0, 0, 123, time.UTC), time.Date(1969, 7, 20, 20, 17, 0, 0, time.UTC), {}} {
			for _, click := range []int{1, 2, 10, 12345} {
				want := fmt.Sprintf("%s-%d-c%d", user, at.UnixNano(), click)
				if got := (Plan{At: at}).Key(Buyer{User: user}, click); got != want {
					t.Fatalf("Key = %q, want %q", got, want)
				}
			}
		}
	}
}

// BenchmarkClickKey is a click's Idempotency-Key, as preparing a burst makes one for every click:
// by hand (clickKey) beside the fmt.Sprintf it replaced, in the same run.
func BenchmarkClickKey(b *testing.B) {
	at := time.Now().UnixNano()
	const user = "buyer-0001234"
	b.Run("way=clickKey", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_ = clickKey(user, at, 1)
		}
	})
	b.Run("way=sprintf", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_ = fmt.Sprintf("%s-%d-c%d", user, at, 1)
		}
	})
}
