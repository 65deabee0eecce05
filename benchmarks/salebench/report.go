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
	table(o, rs[0].bursts, func(m figure, i int) string {
		vals := make([]float64, len(rs))
		for j, r := range rs {
			vals[j] = m.f(r, r.bursts[i])
		}
		return cell(m.format, vals)
	})
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

// table prints a row for every figure with a column for each burst, cellOf(figure, burst index)
// in each.
func table(o options, bursts []burst, cellOf func(m figure, i int) string) {
	tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	head := "measure\t"
	for _, b := range bursts {
		head += fmt.Sprintf("%d -> %d units\t", o.buyers, b.units)
	}
	fmt.Fprintln(tw, head)
	for _, m := range figures {
		line := m.name + "\t"
		for i := range bursts {
			line += cellOf(m, i) + "\t"
		}
		fmt.Fprintln(tw, line)
	}
	_ = tw.Flush()
}

// figure is one row of the report: a figure of a burst in its round.
type figure struct {
	name, format string
	f            func(r round, b burst) float64
}

var figures = []figure{
	{"units sold", "%.0f", func(_ round, b burst) float64 { return float64(b.sold) }},
	{"last unit sold (ms)", "%.0f", func(_ round, b burst) float64 { return msf(b.lastSold) }},
	{"every buyer answered (ms)", "%.0f", func(_ round, b burst) float64 { return msf(b.answered) }},
	{"last order in PostgreSQL, after the last answer (ms)", "%.0f", func(_ round, b burst) float64 { return msf(b.inPostgres) }},
	{"requests/s", "%.0f", func(_ round, b burst) float64 { return b.rps }},
	{"x the /healthz ceiling", "%.2f", func(r round, b burst) float64 { return b.rps / r.ceiling }},
	{"server CPU per request (us)", "%.1f", func(_ round, b burst) float64 { return perRequest(b.serverCPU, b) }},
	{"Redis CPU per request (us)", "%.1f", func(_ round, b burst) float64 { return perRequest(b.redisCPU, b) }},
	{"PostgreSQL CPU per request (us)", "%.1f", func(_ round, b burst) float64 { return perRequest(b.postgresCPU, b) }},
	{"the box's CPU per request, every process (us)", "%.1f", func(_ round, b burst) float64 { return perRequest(b.boxCPU, b) }},
	{"generator CPU per request (us)", "%.1f", func(_ round, b burst) float64 { return perRequest(b.generatorCPU, b) }},
	{"wrk CPU per request, sold-out path (us)", "%.1f", func(r round, _ burst) float64 { return us(r.wrkCPU) }},
	{"generator CPU / wrk's", "%.2f", func(r round, b burst) float64 { return perRequest(b.generatorCPU, b) / max(us(r.wrkCPU), 0.001) }},
	{"generator CPU per request, from the release (us)", "%.1f", func(_ round, b burst) float64 { return perRequest(b.generatorBurstCPU, b) }},
	{"  the same / wrk's", "%.2f", func(r round, b burst) float64 { return perRequest(b.generatorBurstCPU, b) / max(us(r.wrkCPU), 0.001) }},
	{"server peak RSS (MiB)", "%.0f", func(_ round, b burst) float64 { return float64(b.serverRSS) / 1024 }},
	{"generator peak RSS (MiB)", "%.0f", func(_ round, b burst) float64 { return float64(b.generator) / 1024 }},
}

// compare prints, for every figure, the median of the rounds' own ratios, after over before (the
// rounds of -fsctl over those of -against, paired in the order they ran), with their range: a
// box's swings move both builds of a round together, so a round's ratio holds still where the
// builds' own medians do not.
func compare(o options, before, after []round) {
	fmt.Printf("\nratio, -fsctl over -against: the median of the %d rounds' own ratios (lowest-highest)\n", len(after))
	table(o, after[0].bursts, func(m figure, i int) string {
		return ratioCell(ratios(before, after, func(r round) float64 { return m.f(r, r.bursts[i]) }))
	})
	fmt.Printf("\nthe /healthz ceiling %sx; the sold-out path, server CPU a request %sx\n",
		ratioCell(ratios(before, after, func(r round) float64 { return r.ceiling })),
		ratioCell(ratios(before, after, func(r round) float64 { return us(r.soldOutCPU) })))
}

// ratios is f of each round of after over f of the round of before run beside it; a round where
// before's figure is 0 (a figure the earlier build does not report) has no ratio.
func ratios(before, after []round, f func(r round) float64) []float64 {
	var out []float64
	for i := range min(len(before), len(after)) {
		if b := f(before[i]); b != 0 {
			out = append(out, f(after[i])/b)
		}
	}
	return out
}

// ratioCell is cell of ratios, "-" when there are none.
func ratioCell(rs []float64) string {
	if len(rs) == 0 {
		return "-"
	}
	return cell("%.2f", rs)
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
