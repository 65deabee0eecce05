package loadgen

import (
	"math"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
)

// prepareBudget is the memory a buyer may take while it is prepared before the collector runs
// anyway: a raw-engine buyer with an HS256 token keeps about 1.3 KB, an http-engine one about
// 2.4 KB; a profile whose tokens leave garbage behind (RS256 signing) reaches it and is collected.
const prepareBudget = 4 << 10

// collectorHolds counts the preparations under way in this process and what they turned off.
type collectorHolds struct {
	sync.Mutex
	holds   int
	percent int   // GOGC before the first hold
	limit   int64 // the memory limit before the first hold
}

var collectorHold collectorHolds

// holdCollector keeps Go's collector from running while buyers are prepared, and returns what
// lets it run again. The prepared buyers live until the end of the burst, so a collection during
// their preparation frees next to nothing, yet with the default headroom the collector runs each
// time their heap doubles and marks every buyer prepared so far each time: 50,000 buyers prepared
// on 377 ms of CPU with it and 217 ms without it (2-core box, raw engine). Instead the collector
// is off (GOGC=off) under a memory limit of prepareBudget a buyer above what the process holds,
// and when the last preparation is done one collection runs, before the connections are dialled
// and the barrier opens, so the burst begins with a heap goal above its buyers. A GOGC=off the
// process already runs with is left alone.
func holdCollector(buyers int) (release func()) {
	h := &collectorHold
	h.Lock()
	defer h.Unlock()
	budget := int64(buyers) * prepareBudget
	if h.holds == 0 {
		if h.percent = debug.SetGCPercent(-1); h.percent < 0 {
			return func() {}
		}
		h.limit = debug.SetMemoryLimit(-1)
		debug.SetMemoryLimit(min(h.limit, saturatingAdd(inUse(), budget)))
	} else if cur := debug.SetMemoryLimit(-1); cur < h.limit {
		debug.SetMemoryLimit(min(h.limit, saturatingAdd(cur, budget)))
	}
	h.holds++
	var once sync.Once
	return func() { once.Do(h.release) }
}

// release ends one hold; the last one restores GOGC and the memory limit and collects once.
func (h *collectorHolds) release() {
	h.Lock()
	defer h.Unlock()
	if h.holds--; h.holds > 0 {
		return
	}
	debug.SetGCPercent(h.percent)
	debug.SetMemoryLimit(h.limit)
	runtime.GC()
}

// inUse is the memory the Go runtime holds from the OS now, as the memory limit counts it.
func inUse() int64 {
	s := []metrics.Sample{{Name: "/memory/classes/total:bytes"}, {Name: "/memory/classes/heap/released:bytes"}}
	metrics.Read(s)
	return int64(s[0].Value.Uint64() - s[1].Value.Uint64())
}

// saturatingAdd is a+b, or the largest limit when that overflows.
func saturatingAdd(a, b int64) int64 {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}
