package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fsctl/fsctl/blast"
	"github.com/fsctl/fsctl/internal/contract/outcome"
	"github.com/fsctl/fsctl/loadgen"
)

// writeShardFiles writes n shard files of one burst of buyers at one item: buyers below sold
// were told RESERVED, the rest SOLD_OUT; each file records the item's stock.
func writeShardFiles(t *testing.T, n, buyers, sold int, stock int64) []string {
	t.Helper()
	at := time.Date(2026, 11, 27, 9, 0, 0, 0, time.UTC)
	item := loadgen.Target{SaleID: "bf", ItemID: "console"}
	dir := t.TempDir()
	var paths []string
	for i := range n {
		res := &loadgen.Result{At: at, Released: at, Conns: 2}
		for k := i; k < buyers; k += n {
			done := at.Add(time.Duration(k+1) * time.Millisecond)
			r := loadgen.Record{Buyer: k, User: fmt.Sprint("u", k), Key: fmt.Sprint("k", k), Target: item, Attempt: 1,
				Intended: at, Started: at, Written: at.Add(time.Duration(k) * time.Microsecond), Done: done, Outcome: outcome.SoldOut}
			if k < sold {
				r.Outcome, r.OrderID = outcome.Reserved, fmt.Sprint("o", k)
			}
			res.Records = append(res.Records, r)
		}
		res.Buyers = len(res.Records)
		h := loadgen.HeaderOf(loadgen.Plan{Buyers: buyers, Shard: loadgen.Shard{Index: i, Count: n}}, res, map[loadgen.Target]loadgen.ItemLimit{item: {Stock: stock, PerUser: 1}})
		var buf bytes.Buffer
		if err := loadgen.WriteRecords(&buf, h, res.Records); err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, fmt.Sprintf("shard-%d.jsonl", i))
		if err := os.WriteFile(p, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, p)
	}
	return paths
}

// runMerge runs fsctl blast merge with args through the real command tree.
func runMerge(t *testing.T, args ...string) (string, int, error) {
	t.Helper()
	return runCLI(t, append([]string{"blast", "merge"}, args...)...)
}

func TestBlastMerge(t *testing.T) {
	files := writeShardFiles(t, 4, 40, 10, 10)
	html := filepath.Join(t.TempDir(), "report.html")
	out, code, err := runMerge(t, append(files, "--output", "json", "--html", html, "--expect-sold", "10")...)
	if code != 0 {
		t.Fatalf("exit %d: %v\n%s", code, err, out)
	}
	var s blast.Summary
	if err := json.Unmarshal([]byte(out), &s); err != nil || s.Sold != 10 || s.Requests != 40 || s.Buyers != 40 || len(s.Fairness) != 1 || s.Fairness[0].FirstKShare != 1 {
		t.Errorf("summary %v: %s", err, out)
	}
	if page, err := os.ReadFile(html); err != nil || !strings.Contains(string(page), "<svg") {
		t.Errorf("html report: %v", err)
	}

	// 10 sold against a stock of 8 (each shard sold only 2 or 3): broken, exit 4.
	out, code, _ = runMerge(t, writeShardFiles(t, 4, 40, 10, 8)...)
	if code != exitInvariant || !strings.Contains(out, "invariant BROKEN  no oversell (responses)") || !strings.Contains(out, "bf:console: 10 reservations for 8 units") {
		t.Errorf("oversell over shards: exit %d\n%s", code, out)
	}
	if _, code, _ := runMerge(t, append(files, "--expect-sold", "11")...); code != exitCheck {
		t.Errorf("missed --expect-sold: exit %d, want %d", code, exitCheck)
	}
	if _, code, err := runMerge(t, files[:3]...); code != 1 || err == nil || !strings.Contains(err.Error(), "4 shards, got 3 files") {
		t.Errorf("a missing shard: exit %d, %v", code, err)
	}
	for _, args := range [][]string{{}, {files[0], "--output", "yaml"}, {files[0], "--bogus"}} {
		if _, code, _ := runMerge(t, args...); code != 2 {
			t.Errorf("%v: exit %d, want 2", args, code)
		}
	}
}
