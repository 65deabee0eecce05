package blast

import (
	"cmp"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/fsctl/fsctl/loadgen"
)

// Merged is one burst put back together from its shards' records files.
type Merged struct {
	// Result is the whole burst: At as every shard planned it, Released and Prepared from the
	// slowest shard, Buyers and Conns summed, Records the union.
	Result *loadgen.Result
	// Limits are the item limits the shards agreed on.
	Limits map[loadgen.Target]loadgen.ItemLimit
	// Shards is how many files were merged.
	Shards int
}

// Combine checks that files are every shard of one burst, each exactly once, and joins them.
// A missing shard is an error rather than a smaller report: its buyers' answers are unknown,
// so neither the counts nor the invariants would mean anything.
func Combine(files []loadgen.RecordFile) (Merged, error) {
	if len(files) == 0 {
		return Merged{}, fmt.Errorf("no records files to merge")
	}
	first := files[0].Header
	n := max(first.Shard.Count, 1)
	if len(files) != n {
		return Merged{}, fmt.Errorf("burst was split into %d shards, got %d files", n, len(files))
	}
	res := &loadgen.Result{At: first.At, Resolved: first.Resolution()}
	limits := first.LimitMap()
	seen := make([]bool, n)
	for i, f := range files {
		h := f.Header
		switch {
		case !h.At.Equal(first.At):
			return Merged{}, fmt.Errorf("file %d released at %s, file 1 at %s: not one burst", i+1, h.At, first.At)
		case h.Buyers != first.Buyers:
			return Merged{}, fmt.Errorf("file %d planned %d buyers, file 1 %d: not one burst", i+1, h.Buyers, first.Buyers)
		case max(h.Shard.Count, 1) != n:
			return Merged{}, fmt.Errorf("file %d is shard %d/%d, file 1 of %d shards", i+1, h.Shard.Index, h.Shard.Count, n)
		case h.Shard.Index < 0 || h.Shard.Index >= n:
			return Merged{}, fmt.Errorf("file %d: shard %d/%d out of range", i+1, h.Shard.Index, n)
		case seen[h.Shard.Index]:
			return Merged{}, fmt.Errorf("shard %d/%d given twice", h.Shard.Index, n)
		}
		seen[h.Shard.Index] = true
		for t, l := range h.LimitMap() {
			if have, ok := limits[t]; ok && have != l {
				return Merged{}, fmt.Errorf("shards disagree on %s: %+v and %+v", t, have, l)
			}
			limits[t] = l
		}
		if h.Released.After(res.Released) {
			res.Released = h.Released
		}
		res.Prepared = max(res.Prepared, time.Duration(h.PreparedNs))
		if h.Resolution() != res.Resolved {
			res.Resolved = mixed(res.Resolved, h.Resolution())
		}
		res.Conns += h.Conns
		res.Buyers += h.ShardBuyers
		for _, r := range f.Records {
			// Pods and processes may reuse one local address: the shard keeps connections apart.
			if r.Conn != "" && n > 1 {
				r.Conn = strconv.Itoa(h.Shard.Index) + "/" + r.Conn
			}
			res.Records = append(res.Records, r)
		}
	}
	slices.SortStableFunc(res.Records, func(a, b loadgen.Record) int { return a.Buyer - b.Buyer })
	return Merged{Result: res, Limits: limits, Shards: n}, nil
}

// mixed is the Resolution of shards that ran differently: both engines (and HTTP versions) named, and the
// longest timeout, which bounded the slowest request any shard allowed.
func mixed(a, b loadgen.Resolution) loadgen.Resolution {
	if !slices.Contains(strings.Split(a.Engine, "+"), b.Engine) {
		a.Engine = strings.Trim(a.Engine+"+"+b.Engine, "+")
	}
	if !slices.Contains(strings.Split(a.HTTP, "+"), b.HTTP) {
		a.HTTP = strings.Trim(a.HTTP+"+"+b.HTTP, "+")
	}
	a.EngineAuto = a.EngineAuto && b.EngineAuto
	a.Fallback = cmp.Or(a.Fallback, b.Fallback)
	if b.Timeout > a.Timeout {
		a.Timeout, a.TimeoutAuto = b.Timeout, b.TimeoutAuto
	}
	return a
}

// Merge reads the records files of every shard of one burst and reports it as one: the
// summary with the response invariants checked over the union (an oversell shows only there,
// when each shard alone stayed within the stock) and the records for the HTML report.
func Merge(paths ...string) (Summary, []loadgen.Record, error) {
	files := make([]loadgen.RecordFile, 0, len(paths))
	for _, p := range paths {
		f, err := readRecordsFile(p)
		if err != nil {
			return Summary{}, nil, err
		}
		files = append(files, f)
	}
	m, err := Combine(files)
	if err != nil {
		return Summary{}, nil, err
	}
	s := Summarize(m.Result, CheckResponses(m.Result.Records, m.Limits))
	return s, m.Result.Records, nil
}

func readRecordsFile(path string) (loadgen.RecordFile, error) {
	fh, err := os.Open(path)
	if err != nil {
		return loadgen.RecordFile{}, err
	}
	defer fh.Close()
	f, err := loadgen.ReadRecords(fh)
	if err != nil {
		return loadgen.RecordFile{}, fmt.Errorf("%s: %w", path, err)
	}
	return f, nil
}
