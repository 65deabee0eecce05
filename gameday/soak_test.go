package gameday

import (
	"strings"
	"testing"
	"time"
)

func TestJudgeGrowth(t *testing.T) {
	rule := growthRule{figure: "goroutines", factor: 1.5, slack: 10}
	for _, tc := range []struct {
		name   string
		series []float64
		ok     bool
	}{
		{"flat", []float64{100, 110, 105, 108, 102, 109}, true},
		{"warm-up, then flat", []float64{40, 120, 150, 150, 140, 155, 150, 152, 149}, true},
		{"sawtooth of restarts", []float64{100, 20, 100, 30, 110, 25, 105, 40, 95}, true},
		{"a burst at the end", []float64{100, 105, 98, 102, 101, 99, 104, 400, 103}, true},
		{"climbs without bound", []float64{100, 200, 300, 400, 500, 600}, false},
		{"slow leak", []float64{100, 110, 130, 150, 170, 190, 210, 230, 250}, false},
		{"too few samples", []float64{1, 1, 1, 1, 1}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if v := judgeGrowth(rule, tc.series); v.OK != tc.ok {
				t.Fatalf("judgeGrowth(%v) = %v (%s), want %v", tc.series, v.OK, v.Detail, tc.ok)
			}
		})
	}
}

// A sample that could not read the instances or Redis (a fault had them down) is left out of
// those verdicts rather than read as a zero that would flatter a third.
func TestSoakJudgeSkipsSamplesThatReadNothing(t *testing.T) {
	var s Soak
	for i := range 9 {
		sm := SoakSample{At: time.Duration(i) * time.Second, Instances: 3, RSS: 100 << 20, Heap: 50 << 20, Goroutines: 200, OpenFiles: 40,
			RedisMemory: 10 << 20, Keys: 1000, Permanent: 30}
		if i == 1 {
			sm = SoakSample{At: sm.At, Error: "every instance down"}
		}
		if i >= 6 {
			sm.RSS, sm.Goroutines = 1<<30, 5000 // a leak lifts the whole last third
		}
		s.Samples = append(s.Samples, sm)
	}
	s.Judge()
	failed := map[string]bool{}
	for _, v := range s.Verdicts {
		failed[v.Figure] = !v.OK
	}
	want := map[string]bool{"instance RSS": true, "instance goroutines": true, "instance heap in use": false,
		"instance open files": false, "Redis keys without expiry": false, "Redis bytes per key": false}
	for f, w := range want {
		if failed[f] != w {
			t.Errorf("%s failed = %v, want %v (%v)", f, failed[f], w, s.Verdicts)
		}
	}
	if s.OK() {
		t.Error("a soak with a leak passed")
	}
}

func TestParseFigures(t *testing.T) {
	page := `# HELP go_goroutines Number of goroutines that currently exist.
# TYPE go_goroutines gauge
go_goroutines 123
go_memstats_heap_inuse_bytes 4.5e+07
process_open_fds 37
process_resident_memory_bytes 9.8304e+07
fsctl_connections_shed_total{action="answered"} 3
`
	m, err := parseFigures(strings.NewReader(page))
	if err != nil {
		t.Fatal(err)
	}
	if m["go_goroutines"] != 123 || m["process_open_fds"] != 37 || m["go_memstats_heap_inuse_bytes"] != 45e6 || m["process_resident_memory_bytes"] != 98304000 {
		t.Fatalf("parsed %v", m)
	}
	if _, err := parseFigures(strings.NewReader("go_goroutines 1\n")); err == nil {
		t.Fatal("a page without the process collector's figures parsed")
	}
}

func TestParseRedisInfo(t *testing.T) {
	info := "# Memory\r\nused_memory:1048576\r\nused_memory_human:1.00M\r\n\r\n# Keyspace\r\ndb0:keys=120,expires=100,avg_ttl=5000,subexpiry=0\r\ndb1:keys=5,expires=0,avg_ttl=0\r\n"
	mem, keys, expires := parseRedisInfo(info)
	if mem != 1<<20 || keys != 125 || expires != 100 {
		t.Fatalf("parsed used_memory %v, keys %v, expires %v", mem, keys, expires)
	}
}

// A Redis restarted empty drops the records; the rate counts only what the buyers added.
func TestIdempotencyNoteCountsGains(t *testing.T) {
	samples := []SoakSample{
		{At: 0, Keys: 10, Idempotency: 0},
		{At: time.Minute, Keys: 3000, Idempotency: 1000},
		{At: 2 * time.Minute, Keys: 0, Idempotency: 0, Error: "redis: connection refused"},
		{At: 3 * time.Minute, Keys: 600, Idempotency: 200},
		{At: 4 * time.Minute, Keys: 3600, Idempotency: 1200},
	}
	note := idempotencyNote(samples)
	if !strings.Contains(note, "+500 a minute") || !strings.Contains(note, "near 720000") {
		t.Fatalf("note %q: want 2000 records gained over 4 minutes, +500 a minute, levelling off near 720000", note)
	}
}
