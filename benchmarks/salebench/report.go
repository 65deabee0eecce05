package main

import (
	"fmt"
	"os"
	"slices"
	"text/tabwriter"
	"time"
)

// perRequest is d spread over the burst's requests, in microseconds.
func perRequest(d time.Duration, b burst) float64 { return us(d) / float64(max(b.requests, 1)) }

// report prints one table; with several rounds each cell is the median of the rounds and, in
// brackets, their range (a ratio is taken within its round, against that round's ceiling, before
// the median): on a shared box rounds minutes apart differ by a quarter or more, and only the
// range says whether two builds' medians differ by more than that.
func report(o options, rs []round) {
	fmt.Println()
	if len(rs) > 1 {
		fmt.Printf("median of %d rounds (lowest-highest)\n", len(rs))
	}
	tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	head := "measure\t"
	for _, b := range rs[0].bursts {
		head += fmt.Sprintf("%d -> %d units\t", o.buyers, b.units)
	}
	fmt.Fprintln(tw, head)
	row := func(name, format string, f func(r round, b burst) float64) {
		line := name + "\t"
		for i := range rs[0].bursts {
			vals := make([]float64, len(rs))
			for j, r := range rs {
				vals[j] = f(r, r.bursts[i])
			}
			line += cell(format, vals) + "\t"
		}
		fmt.Fprintln(tw, line)
	}
	row("units sold", "%.0f", func(_ round, b burst) float64 { return float64(b.sold) })
	row("last unit sold (ms)", "%.0f", func(_ round, b burst) float64 { return msf(b.lastSold) })
	row("every buyer answered (ms)", "%.0f", func(_ round, b burst) float64 { return msf(b.answered) })
	row("last order in PostgreSQL, after the last answer (ms)", "%.0f", func(_ round, b burst) float64 { return msf(b.inPostgres) })
	row("requests/s", "%.0f", func(_ round, b burst) float64 { return b.rps })
	row("x the /healthz ceiling", "%.2f", func(r round, b burst) float64 { return b.rps / r.ceiling })
	row("server CPU per request (us)", "%.1f", func(_ round, b burst) float64 { return perRequest(b.serverCPU, b) })
	row("Redis CPU per request (us)", "%.1f", func(_ round, b burst) float64 { return perRequest(b.redisCPU, b) })
	row("PostgreSQL CPU per request (us)", "%.1f", func(_ round, b burst) float64 { return perRequest(b.postgresCPU, b) })
	row("the box's CPU per request, every process (us)", "%.1f", func(_ round, b burst) float64 { return perRequest(b.boxCPU, b) })
	row("generator CPU per request (us)", "%.1f", func(_ round, b burst) float64 { return perRequest(b.generatorCPU, b) })
	row("wrk CPU per request, sold-out path (us)", "%.1f", func(r round, _ burst) float64 { return us(r.wrkCPU) })
	row("generator CPU / wrk's", "%.2f", func(r round, b burst) float64 { return perRequest(b.generatorCPU, b) / max(us(r.wrkCPU), 0.001) })
	row("generator CPU per request, from the release (us)", "%.1f", func(_ round, b burst) float64 { return perRequest(b.generatorBurstCPU, b) })
	row("  the same / wrk's", "%.2f", func(r round, b burst) float64 { return perRequest(b.generatorBurstCPU, b) / max(us(r.wrkCPU), 0.001) })
	row("server peak RSS (MiB)", "%.0f", func(_ round, b burst) float64 { return float64(b.serverRSS) / 1024 })
	row("generator peak RSS (MiB)", "%.0f", func(_ round, b burst) float64 { return float64(b.generator) / 1024 })
	_ = tw.Flush()
	pick := func(format string, f func(r round) float64) string {
		vals := make([]float64, len(rs))
		for i, r := range rs {
			vals[i] = f(r)
		}
		return cell(format, vals)
	}
	fmt.Printf("\nceiling: wrk -t2 -c%d -> /healthz %s req/s; sold-out purchase (fresh keys) %s req/s = %sx, server CPU %s us a request\n",
		o.wrkConns, pick("%.0f", func(r round) float64 { return r.ceiling }), pick("%.0f", func(r round) float64 { return r.soldOut }),
		pick("%.2f", func(r round) float64 { return r.soldOut / r.ceiling }), pick("%.1f", func(r round) float64 { return us(r.soldOutCPU) }))
	fmt.Println("every burst: reconcile OK (Redis, Kafka and PostgreSQL agree)")
}

// cell is the median of vals in format and, when there are several, their range: "36.1 (30.0-54.2)".
func cell(format string, vals []float64) string {
	s := fmt.Sprintf(format, median(slices.Clone(vals)))
	if len(vals) < 2 {
		return s
	}
	return s + " (" + fmt.Sprintf(format, slices.Min(vals)) + "-" + fmt.Sprintf(format, slices.Max(vals)) + ")"
}

func median(v []float64) float64 {
	slices.Sort(v)
	if len(v)%2 == 1 {
		return v[len(v)/2]
	}
	return (v[len(v)/2-1] + v[len(v)/2]) / 2
}

func msf(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func us(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1000 }
