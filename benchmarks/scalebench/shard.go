package main

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"text/tabwriter"
	"time"
)

// shardCount is how many processes the shard check splits its burst over.
const shardCount = 4

// shardCheck releases n buyers against serve once from one process (sale A) and once from
// shardCount processes released at one --at and merged with `fsctl blast merge` (sale B, the
// same stock), prints both reports side by side and fails unless their verdicts and counts match.
func (b *bench) shardCheck(ctx context.Context, n int) error {
	stock, lead, unix := min(10000, n/5), b.o.leadFor(n), time.Now().Unix()
	saleA, saleB := fmt.Sprintf("scale-single-%d-%d", n, unix), fmt.Sprintf("scale-shards-%d-%d", n, unix)
	fmt.Printf("\nshard check: %d buyers -> serve, %d units: one process (sale %s), then %d shards + merge (sale %s)\n",
		n, stock, saleA, shardCount, saleB)
	if err := createSale(ctx, b.o, b.dir, saleA, stock); err != nil {
		return err
	}
	fmt.Printf("blast: %d buyers -> serve, one process, %d connections, release in %s ...\n", n, b.o.conns, lead)
	single, err := runFsctl(ctx, b.o, b.burstArgs(saleA, n, b.o.conns, "--in", lead.String(), "--expect-sold", strconv.Itoa(stock))...)
	if err != nil {
		return err
	}
	single.progress(fmt.Sprintf("sold %d, %s", single.rep.Sold, invariants(single.rep)))
	if err := checkSale(ctx, b.o, saleA, single.rep.Sold); err != nil {
		return err
	}
	if err := createSale(ctx, b.o, b.dir, saleB, stock); err != nil {
		return err
	}
	merged, err := b.shards(ctx, saleB, n, stock, lead)
	if err != nil {
		return err
	}
	fmt.Printf("  merge: exit %d, %.0f req/s over %.0f ms, sold %d, %s (merge itself: peak RSS %.0f MiB, CPU %.2f s)\n",
		merged.exit, merged.rep.Throughput, merged.rep.DurationMs, merged.rep.Sold, invariants(merged.rep),
		float64(merged.rss)/1024, merged.cpu.Seconds())
	if err := checkSale(ctx, b.o, saleB, merged.rep.Sold); err != nil {
		return err
	}
	if !compare(single, merged) {
		return errors.New("shard check: 4 shards + merge differ from one process")
	}
	return nil
}

// burstArgs are the arguments of a blast of n buyers at sale's item "drop" on serve over conns
// connections, then extra.
func (b *bench) burstArgs(sale string, n, conns int, extra ...string) []string {
	return append([]string{"blast", "--target", b.serveURL, "--sale", sale, "--item", "drop",
		"--buyers", strconv.Itoa(n), "--conns", strconv.Itoa(conns), "--engine", "raw", "-o", "json"}, extra...)
}

// shards runs shardCount blast processes at once, each with its part of the n buyers, a share
// of the connections, the same --at (lead from now) and its --records file, then merges the
// records and returns merge's report.
func (b *bench) shards(ctx context.Context, sale string, n, stock int, lead time.Duration) (blastRun, error) {
	at := time.Now().Add(lead).UTC().Format(time.RFC3339Nano)
	fmt.Printf("blast: %d buyers -> serve, %d processes (--shard i/%d, %d connections each), --at %s ...\n",
		n, shardCount, shardCount, b.o.conns/shardCount, at)
	runs := make([]blastRun, shardCount)
	errs := make([]error, shardCount)
	files := make([]string, shardCount)
	var wg sync.WaitGroup
	for i := range shardCount {
		files[i] = filepath.Join(b.dir, fmt.Sprintf("%s-shard-%d.jsonl", sale, i))
		args := b.burstArgs(sale, n, b.o.conns/shardCount, "--shard", fmt.Sprintf("%d/%d", i, shardCount),
			"--at", at, "--records", files[i])
		wg.Go(func() { runs[i], errs[i] = runFsctl(ctx, b.o, args...) })
	}
	wg.Wait()
	var exits []string
	var rss int64
	var cpu time.Duration
	for i, r := range runs {
		if errs[i] != nil {
			return blastRun{}, fmt.Errorf("shard %d/%d: %w", i, shardCount, errs[i])
		}
		exits = append(exits, strconv.Itoa(r.exit))
		rss, cpu = max(rss, r.rss), cpu+r.cpu
	}
	fmt.Printf("  shards: exit %s, largest peak RSS %.0f MiB, CPU %.2f s in all\n",
		strings.Join(exits, " "), float64(rss)/1024, cpu.Seconds())
	merged, err := runFsctl(ctx, b.o, append(append([]string{"blast", "merge"}, files...),
		"-o", "json", "--expect-sold", strconv.Itoa(stock))...)
	for _, f := range files {
		_ = os.Remove(f)
	}
	return merged, err
}

// compare prints the single process's report beside the merged one (exit status, requests,
// sold, each outcome's count, each verdict's status) and says whether they are the same.
func compare(single, merged blastRun) bool {
	type row struct{ name, a, b string }
	rows := []row{
		{"exit status", strconv.Itoa(single.exit), strconv.Itoa(merged.exit)},
		{"requests", strconv.Itoa(single.rep.Requests), strconv.Itoa(merged.rep.Requests)},
		{"sold", strconv.Itoa(single.rep.Sold), strconv.Itoa(merged.rep.Sold)},
	}
	add := func(name string, of func(r blastReport) map[string]string) {
		a, b := of(single.rep), of(merged.rep)
		for _, k := range union(a, b) {
			rows = append(rows, row{name + " " + k, a[k], b[k]})
		}
	}
	add("outcome", func(r blastReport) map[string]string {
		m := map[string]string{}
		for _, oc := range r.Outcomes {
			m[oc.Outcome] = strconv.Itoa(oc.Count)
		}
		return m
	})
	add("verdict", func(r blastReport) map[string]string {
		m := map[string]string{}
		for _, v := range r.Verdicts {
			m[strings.TrimPrefix(v.Group+"/"+v.Check, "/")] = v.Status
		}
		return m
	})
	same := true
	tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "\tone process\t4 shards + merge\t")
	for _, r := range rows {
		mark := ""
		if r.a != r.b {
			same, mark = false, "DIFFERENT"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", r.name, dash(r.a), dash(r.b), mark)
	}
	_ = tw.Flush()
	yes := map[bool]string{true: "yes", false: "no"}[same]
	fmt.Printf("same verdict and counts: %s\n", yes)
	return same
}

// union is the keys of a, then those of b that a lacks, each part sorted.
func union(a, b map[string]string) []string {
	keys := slices.Sorted(maps.Keys(a))
	for _, k := range slices.Sorted(maps.Keys(b)) {
		if _, ok := a[k]; !ok {
			keys = append(keys, k)
		}
	}
	return keys
}

// dash shows a missing value as "-".
func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
