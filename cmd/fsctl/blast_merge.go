package main

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/fsctl/fsctl/blast"
	"github.com/fsctl/fsctl/internal/contract/finding"
)

type blastMergeOptions struct {
	output        outputFlag
	html          string
	maxP99        time.Duration
	minThroughput float64
	expectSold    int
}

// newBlastMergeCmd is `fsctl blast merge`: the report of a burst that was split over processes
// or pods with --shard, from the --records file each of them wrote.
func newBlastMergeCmd() *cobra.Command {
	var o blastMergeOptions
	cmd := &cobra.Command{
		Use:   "merge FILE...",
		Short: "Combine the --records files of every shard of one burst into one report",
		Long: `Read the records file each shard of one burst wrote (fsctl blast --shard i/n --records FILE),
check they are all n shards of the same burst (same --at, same buyers, each shard once), and
report the burst as one: outcomes, latency from the intended release, fairness, and the response
invariants over the union of the shards - an oversell shows only there when every shard alone
stayed within the stock. The server's own state is not read: run fsctl reconcile for that.

Exit status: 0 all good, 1 could not run, 2 a bad flag, 3 a threshold missed, 4 an invariant broken.`,
		Example: `  fsctl blast merge shard-0.jsonl shard-1.jsonl shard-2.jsonl shard-3.jsonl
  fsctl blast merge out/shard-*.jsonl --html report.html --expect-sold 500 --output json`,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) == 0 {
				return usageError(errors.New("give the --records file of every shard of the burst"))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			return runBlastMerge(cmd.OutOrStdout(), o, args)
		},
	}
	f := cmd.Flags()
	bindOutput(f, &o.output, "the report")
	f.StringVar(&o.html, "html", "", "also write the report with charts to this HTML file")
	f.DurationVar(&o.maxP99, "max-p99", 0, "fail (exit 3) when the p99 latency is above this")
	f.Float64Var(&o.minThroughput, "min-throughput", 0, "fail (exit 3) below this many requests per second")
	f.IntVar(&o.expectSold, "expect-sold", -1, "fail (exit 3) unless exactly this many units were reserved")
	return cmd
}

func runBlastMerge(out io.Writer, o blastMergeOptions, files []string) error {
	sum, recs, err := blast.Merge(files...)
	if err != nil {
		return err
	}
	missed := sum.Check(blast.Thresholds{MaxP99: o.maxP99, MinThroughput: o.minThroughput, ExpectSold: o.expectSold})
	if o.html != "" {
		if err := blast.SaveHTML(o.html, sum, recs); err != nil {
			return err
		}
	}
	err = writeReport(out, o.output, sum)
	switch {
	case err != nil:
		return err
	case !finding.OK(sum.Verdicts, false):
		return invariantBroken(errors.New("invariant broken: see the report"))
	case missed:
		return checkFailed(fmt.Errorf("threshold missed: %s", strings.Join(sum.Failures, "; ")))
	}
	return nil
}
