package blast

import (
	"runtime/debug"
	"testing"

	"github.com/fsctl/fsctl/loadgen"
)

// TestBigBurstGC: a burst of bigBurstClicks or more in this process lowers the collector's
// target to 50 and puts it back after; a smaller one, a shard's small share or a GOGC the user
// set leaves it alone.
func TestBigBurstGC(t *testing.T) {
	t.Setenv("GOGC", "")
	old := debug.SetGCPercent(100)
	defer debug.SetGCPercent(old)
	for _, tc := range []struct {
		name       string
		plan       loadgen.Plan
		gogc, want int
	}{
		{"500,000 buyers", loadgen.Plan{Buyers: 500_000, Clicks: 1}, 0, 50},
		{"50,000 buyers", loadgen.Plan{Buyers: 50_000, Clicks: 1}, 0, 100},
		{"50,000 buyers, 2 clicks", loadgen.Plan{Buyers: 50_000, Clicks: 2}, 0, 50},
		{"a quarter of 200,000", loadgen.Plan{Buyers: 200_000, Clicks: 1, Shard: loadgen.Shard{Index: 1, Count: 4}}, 0, 100},
		{"GOGC set", loadgen.Plan{Buyers: 500_000, Clicks: 1}, 300, 100},
	} {
		if tc.gogc != 0 {
			t.Setenv("GOGC", "300")
		}
		restore := bigBurstGC(tc.plan)
		got := debug.SetGCPercent(100)
		debug.SetGCPercent(got)
		restore()
		if back := debug.SetGCPercent(100); got != tc.want || back != 100 {
			t.Errorf("%s: GC percent %d during the burst (want %d), %d after it (want 100)", tc.name, got, tc.want, back)
		}
	}
}
