package main

import (
	"fmt"
	"os"
	"text/tabwriter"
)

// report prints the table of every burst, one row per (target, buyers); the verdict is the last,
// unaligned column.
func report(rows []measurement) {
	fmt.Println()
	tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "target\tbuyers\tprepare (ms)\trelease spread p99 (ms)\tpeak RSS (MiB)\tRSS per buyer (B)\tCPU per request (us)\tfrom the release (us)\trequests/s\t  verdict")
	for _, m := range rows {
		fmt.Fprintf(tw, "%s\t%d\t%.0f\t%.2f\t%.0f\t%.0f\t%.1f\t%.1f\t%.0f\t  %s\n", m.target, m.buyers, m.rep.PreparedMs,
			m.rep.Wake.P99, float64(m.rss)/1024, float64(m.rss)*1024/float64(m.buyers),
			float64(m.cpu.Microseconds())/float64(max(m.rep.Requests, 1)), m.rep.CPU.BurstUsPerReq, m.rep.Throughput, m.verdict())
	}
	_ = tw.Flush()
	fmt.Println("release spread: when the buyers woke after the barrier opened (blast's wakeSkew); peak RSS and CPU (user+system, preparation included) are blast's whole process; \"from the release\" is blast's own count of its CPU from the release to the last answer")
}
