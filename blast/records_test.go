package blast_test

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fsctl/fsctl/blast"
	"github.com/fsctl/fsctl/internal/contract/finding"
	"github.com/fsctl/fsctl/internal/contract/outcome"
	"github.com/fsctl/fsctl/loadgen"
)

// shardRecords is shard i of n of a burst of buyers at hot: the first sold buyers (by index)
// are told RESERVED, the others SOLD_OUT; buyer k is written k ms after the release.
func shardRecords(at time.Time, i, n, buyers, sold int) []loadgen.Record {
	var recs []loadgen.Record
	for k := i; k < buyers; k += n {
		w := at.Add(time.Duration(k+1) * time.Millisecond)
		r := loadgen.Record{Buyer: k, User: fmt.Sprint("u", k), Target: hot, Key: fmt.Sprint("k", k), Click: 1, Attempt: 1,
			Intended: at, Started: at, Written: w, FirstByte: w.Add(time.Millisecond), Done: w.Add(2 * time.Millisecond),
			Method: "POST", URL: "http://x/buy", Status: 410, Proto: "HTTP/1.1", Outcome: outcome.SoldOut,
			Conn: fmt.Sprint("127.0.0.1:", 40000+k%5)}
		if k < sold {
			r.Status, r.Outcome, r.OrderID = 202, outcome.Reserved, fmt.Sprint("order-", k)
		}
		recs = append(recs, r)
	}
	return recs
}

func writeShard(t *testing.T, dir string, at time.Time, i, n, buyers, sold int, stock int64) string {
	t.Helper()
	p := loadgen.Plan{Buyers: buyers, Shard: loadgen.Shard{Index: i, Count: n}}
	recs := shardRecords(at, i, n, buyers, sold)
	res := &loadgen.Result{At: at, Released: at.Add(time.Duration(i) * time.Microsecond), Buyers: len(recs), Conns: 5,
		Prepared: time.Second, Records: recs}
	path := filepath.Join(dir, fmt.Sprintf("shard-%d.jsonl", i))
	var buf bytes.Buffer
	if err := loadgen.WriteRecords(&buf, loadgen.HeaderOf(p, res, map[loadgen.Target]loadgen.ItemLimit{hot: {Stock: stock, PerUser: 1}}), res.Records); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestRecordsRoundTrip(t *testing.T) {
	at := time.Date(2026, 11, 27, 9, 0, 0, 123456789, time.UTC)
	recs := shardRecords(at, 0, 1, 4, 1)
	recs[3].Error, recs[3].Outcome, recs[3].Done, recs[3].Written = "dial tcp: refused", loadgen.TransportError, time.Time{}, time.Time{}
	h := loadgen.HeaderOf(loadgen.Plan{Buyers: 8, Shard: loadgen.Shard{Index: 1, Count: 2}}, &loadgen.Result{At: at, Buyers: 4, Conns: 2},
		map[loadgen.Target]loadgen.ItemLimit{hot: {Stock: 5, PerUser: 2}})
	var buf bytes.Buffer
	if err := loadgen.WriteRecords(&buf, h, recs); err != nil {
		t.Fatal(err)
	}
	if lines := strings.Count(buf.String(), "\n"); lines != 5 {
		t.Fatalf("%d lines, want a header and 4 records:\n%s", lines, buf.String())
	}
	f, err := loadgen.ReadRecords(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if !f.Header.At.Equal(at) || f.Header.Buyers != 8 || f.Header.ShardBuyers != 4 || f.Header.Shard != (loadgen.Shard{Index: 1, Count: 2}) ||
		f.Header.LimitMap()[hot] != (loadgen.ItemLimit{Stock: 5, PerUser: 2}) || f.Header.Version != loadgen.RecordsVersion {
		t.Errorf("header %+v", f.Header)
	}
	if len(f.Records) != len(recs) {
		t.Fatalf("%d records back, want %d", len(f.Records), len(recs))
	}
	for i := range recs {
		got, want := f.Records[i], recs[i]
		// Times come back equal but without the monotonic reading: compare them with Equal.
		if !got.Written.Equal(want.Written) || !got.Done.Equal(want.Done) || !got.Intended.Equal(want.Intended) {
			t.Errorf("record %d times %v %v, want %v %v", i, got.Written, got.Done, want.Written, want.Done)
		}
		got.Intended, got.Started, got.Written, got.FirstByte, got.Done = want.Intended, want.Started, want.Written, want.FirstByte, want.Done
		if got != want {
			t.Errorf("record %d:\n got %+v\nwant %+v", i, got, want)
		}
	}

	for _, bad := range []string{"", "{\"buyer\":1}\n", `{"format":"fsctl-blast-records","version":99}` + "\n"} {
		if _, err := loadgen.ReadRecords(strings.NewReader(bad)); err == nil {
			t.Errorf("read %q: no error", bad)
		}
	}
}

func TestMergeChecksTheUnion(t *testing.T) {
	at := time.Date(2026, 11, 27, 9, 0, 0, 0, time.UTC)
	dir := t.TempDir()
	// 3 shards of 30 buyers; 9 sold in all for a stock of 9: fine. Each shard used the same 5
	// local addresses: 15 connections in all, not 5.
	var paths []string
	for i := range 3 {
		paths = append(paths, writeShard(t, dir, at, i, 3, 30, 9, 9))
	}
	s, recs, err := blast.Merge(paths...)
	if err != nil {
		t.Fatal(err)
	}
	if s.Requests != 30 || len(recs) != 30 || s.Sold != 9 || s.Buyers != 30 || s.Conns != 15 || s.ConnsUsed != 15 || !finding.OK(s.Verdicts, false) {
		t.Errorf("merged summary %+v", s)
	}
	if s.ReleaseLateMs != 0.002 {
		t.Errorf("release late %vms, want the slowest shard's 0.002", s.ReleaseLateMs)
	}
	// The same sales against a stock of 4 per shard file: each shard sold 3, the union 9 > 4.
	dir2 := t.TempDir()
	paths = paths[:0]
	for i := range 3 {
		paths = append(paths, writeShard(t, dir2, at, i, 3, 30, 9, 4))
	}
	s, _, err = blast.Merge(paths...)
	if err != nil {
		t.Fatal(err)
	}
	if s.Verdicts[0].Passed() || s.Verdicts[0].Problems[0] != "s:hot: 9 reservations for 4 units" {
		t.Errorf("oversell over shards not caught: %+v", s.Verdicts)
	}

	other := filepath.Join(t.TempDir(), "x")
	otherAt := writeShard(t, filepath.Dir(other), at.Add(time.Second), 2, 3, 30, 9, 9)
	for name, files := range map[string][]string{
		"missing shard":   paths[:2],
		"duplicate shard": {paths[0], paths[1], paths[1]},
		"another burst":   {paths[0], paths[1], otherAt},
		"no such file":    {paths[0], paths[1], filepath.Join(dir, "nope")},
	} {
		if _, _, err := blast.Merge(files...); err == nil {
			t.Errorf("%s: merged without an error", name)
		}
	}
}

func TestFairness(t *testing.T) {
	at := time.Unix(1000, 0)
	click := func(user string, writtenMs int, won bool, intendedMs int) loadgen.Record {
		r := loadgen.Record{User: user, Key: user, Target: hot, Attempt: 1, Intended: at.Add(time.Duration(intendedMs) * time.Millisecond),
			Written: at.Add(time.Duration(writtenMs) * time.Millisecond), Outcome: outcome.SoldOut}
		if won {
			r.Outcome, r.OrderID = outcome.Reserved, "o-"+user
		}
		return r
	}
	for _, tc := range []struct {
		name       string
		recs       []loadgen.Record
		by         string
		won, first int
		rho        float64
	}{
		{"first come first served", []loadgen.Record{click("a", 1, true, 0), click("b", 2, true, 0), click("c", 3, false, 0), click("d", 4, false, 0)}, "written", 2, 2, 0.894},
		{"last come first served", []loadgen.Record{click("a", 1, false, 0), click("b", 2, false, 0), click("c", 3, true, 0), click("d", 4, true, 0)}, "written", 2, 0, -0.894},
		{"order did not matter", []loadgen.Record{click("a", 1, true, 0), click("b", 2, false, 0), click("c", 3, false, 0), click("d", 4, true, 0)}, "written", 2, 1, 0},
		// open model: intended time ranks, even though c happened to be written first
		{"intended order", []loadgen.Record{click("a", 9, true, 1), click("b", 9, false, 2), click("c", 0, false, 3)}, "intended", 1, 1, 0.866},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rows := blast.Fairness(tc.recs)
			if len(rows) != 1 {
				t.Fatalf("rows %+v", rows)
			}
			r := rows[0]
			if r.SpearmanMax == nil || *r.SpearmanMax < *r.Spearman-1e-9 {
				t.Errorf("rho %v above its ceiling %v", r.Spearman, r.SpearmanMax)
			}
			if r.OrderBy != tc.by || r.Won != tc.won || r.FirstKWon != tc.first || r.Clicks != len(tc.recs) || r.Spearman == nil ||
				*r.Spearman < tc.rho-0.001 || *r.Spearman > tc.rho+0.001 {
				t.Errorf("got %+v (rho %v), want by %s won %d first %d rho %.3f", r, r.Spearman, tc.by, tc.won, tc.first, tc.rho)
			}
		})
	}
	// A retry that wins makes the click a winner; a click never written does not rank.
	retry := click("a", 5, false, 0)
	retry.Outcome, retry.Attempt = loadgen.Timeout, 1
	won := click("a", 8, true, 0)
	won.Attempt = 2
	lost := click("z", 0, false, 0)
	lost.Written = time.Time{}
	rows := blast.Fairness([]loadgen.Record{retry, won, click("b", 1, false, 0), lost})
	if r := rows[0]; r.Clicks != 2 || r.Won != 1 || r.FirstKWon != 0 || r.FirstKShare != 0 {
		t.Errorf("got %+v", r)
	}
	if rows := blast.Fairness([]loadgen.Record{click("a", 1, false, 0)}); rows[0].Spearman != nil {
		t.Errorf("nobody won, but rho %v", *rows[0].Spearman)
	}
}
