package benchmarks

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/fsctl/fsctl/blast"
	"github.com/fsctl/fsctl/internal/checkout/provision"
	"github.com/fsctl/fsctl/internal/contract/outcome"
	"github.com/fsctl/fsctl/internal/target/profile"
	"github.com/fsctl/fsctl/loadgen"
	checkouttest "github.com/fsctl/fsctl/server/servertest"
)

// BenchmarkBlastReadTraffic shows what the buyers' page refreshes do to the write path: the same
// burst (BLAST_BENCH_BUYERS buyers, default 2,000, for 100 units, the raw engine) against the
// bundled checkout in-process on the local stack, in the same iteration: without reads, with every
// buyer loading the sale page 10 times over the 10 s before the release (fsctl blast
// --refreshes 10), and with 10 more loads over the 10 s after it (--refreshes-after 10: reads
// while the purchases are answered), the order rotating each iteration. It reports the purchases'
// p99 of each, the ratios to the run without reads, and the reads' own p99. Each burst gets a
// fresh sale, so all sell from full stock.
func BenchmarkBlastReadTraffic(b *testing.B) {
	buyers := envInt(b, "BLAST_BENCH_BUYERS", 2000)
	c := checkouttest.Start(b, checkouttest.Options{Quantity: 100, Limit: 1})
	ctx := context.Background()
	n := 0
	burst := func(refreshes, after int) blast.Summary {
		n++
		sl := c.Sale
		sl.ID = fmt.Sprintf("%s-r%d", c.Sale.ID, n)
		if _, err := provision.Sale(ctx, c.App.Orders, c.App.Stock, sl, provision.Options{}); err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = c.App.Stock.Reset(context.Background(), sl) })
		target := loadgen.Target{SaleID: sl.ID, ItemID: "hot"}
		limits, err := blast.FetchLimits(ctx, http.DefaultClient, c.Base, profile.Default(), []loadgen.Target{target})
		if err != nil {
			b.Fatal(err)
		}
		window := 10 * time.Second
		p := loadgen.Plan{BaseURL: c.Base, Targets: []loadgen.Target{target}, Buyers: buyers, UserPrefix: "reads-",
			Secret: checkouttest.Secret, Clicks: 1, Conns: 256, At: time.Now().Add(2 * time.Second)}
		if refreshes > 0 {
			p.Refresh = &loadgen.Refresh{Before: refreshes, After: after, Window: window, Share: 1}
			p.At = time.Now().Add(window + 2*time.Second)
		}
		res, err := loadgen.Run(ctx, p)
		if err != nil {
			b.Fatal(err)
		}
		sum := blast.Summarize(res, blast.CheckResponses(res.Records, limits))
		if sum.Sold != 100 || len(res.Records) != buyers || len(res.Reads) != buyers*(refreshes+after) {
			b.Fatalf("burst sold %d with %d purchases and %d reads", sum.Sold, len(res.Records), len(res.Reads))
		}
		for _, r := range res.Records {
			if r.Outcome != outcome.Reserved && r.Outcome != outcome.SoldOut {
				b.Fatalf("purchase answered %s (%d %s)", r.Outcome, r.Status, r.Error)
			}
		}
		return sum
	}
	variants := []struct {
		name          string
		before, after int
	}{{"no-reads", 0, 0}, {"reads-before", 10, 0}, {"reads-around", 10, 10}}
	// Per iteration, each variant's p99 over the one without reads: the bursts of one iteration
	// run within a minute of each other, so a machine shared with other work skews them alike.
	// The reported ratio is the median over the iterations.
	p99 := make([]float64, len(variants))
	ratios := make([][]float64, len(variants))
	for i := 0; b.Loop(); i++ {
		got := make([]float64, len(variants))
		for j := range variants {
			k := (i + j) % len(variants)
			v := variants[k]
			s := burst(v.before, v.after)
			got[k] = s.Latency.P99
			p99[k] += s.Latency.P99
			line := fmt.Sprintf("%s: purchases p99 %.1fms", v.name, s.Latency.P99)
			if s.Reads != nil {
				line += fmt.Sprintf(" (reads p99 %.1fms, %d reads, %d in flight at the release)", s.Reads.Latency.P99, s.Reads.Requests, s.Reads.InFlightAtRelease)
			}
			b.Log(line)
		}
		for k := range variants {
			ratios[k] = append(ratios[k], got[k]/got[0])
		}
	}
	runs := float64(b.N)
	for k, v := range variants {
		b.ReportMetric(p99[k]/runs, "p99-ms-"+v.name)
		if k > 0 {
			slices.Sort(ratios[k])
			b.ReportMetric(ratios[k][len(ratios[k])/2], v.name+"/no-reads")
		}
	}
}
