package blast

import (
	_ "embed"
	"fmt"
	"html/template"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/fsctl/fsctl/internal/contract/outcome"
	"github.com/fsctl/fsctl/loadgen"
)

//go:embed report.html.tmpl
var reportHTML string

// Chart geometry in SVG units: the plot area sits inside margins that hold the axes' labels.
const (
	chartW, chartH         = 860.0, 300.0
	padL, padR, padT, padB = 64.0, 16.0, 26.0, 40.0
	plotW, plotH           = chartW - padL - padR, chartH - padT - padB
	maxPoints              = 5000
	minBucket              = 50 * time.Millisecond
	maxBuckets             = 400
)

// tick is one labelled position on an axis; dot, bar and series are marks; all in SVG units.
type (
	tick struct {
		Pos   float64
		Label string
	}
	dot struct {
		X, Y  float64
		Color string
	}
	bar struct {
		X, Y, W, H   float64
		Color, Title string
	}
	series struct{ Points, Color, Label string }
)

type legend struct{ Color, Label string }

// chart is one SVG plot, already in SVG coordinates: the template only draws.
type chart struct {
	Title, XLabel, YLabel string
	XTicks, YTicks        []tick
	Dots                  []dot
	Bars                  []bar
	Lines                 []series
	Legend                []legend
	Note                  string
}

// The chart's geometry, for the template.
func (chart) W() float64      { return chartW }
func (chart) H() float64      { return chartH }
func (chart) PadL() float64   { return padL }
func (chart) PadT() float64   { return padT }
func (chart) PlotW() float64  { return plotW }
func (chart) PlotH() float64  { return plotH }
func (chart) Bottom() float64 { return padT + plotH }
func (chart) Right() float64  { return padL + plotW }

type htmlView struct {
	S                        Summary
	FairnessNote             string
	Latency, Outcomes, Stock chart
}

// WriteHTML writes the report as one self-contained HTML page: the summary tables, the verdicts
// and three SVG charts drawn here (latency over time, outcomes over time, stock depletion), so
// the file opens anywhere, offline, and can be attached to an incident.
func WriteHTML(w io.Writer, s Summary, recs []loadgen.Record) error {
	t, err := template.New("report").Funcs(template.FuncMap{
		"f1":  func(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) },
		"f2":  func(v float64) string { return strconv.FormatFloat(v, 'f', 2, 64) },
		"rho": rho,
	}).Parse(reportHTML)
	if err != nil {
		return fmt.Errorf("parse the HTML report template: %w", err)
	}
	v := htmlView{S: s, FairnessNote: FairnessNote}
	byIntended := slices.ContainsFunc(recs, func(r loadgen.Record) bool { return !r.Intended.Equal(s.At) })
	v.Latency = latencyChart(s.At, recs, byIntended)
	v.Outcomes = outcomesChart(s.At, recs)
	v.Stock = stockChart(s.At, recs)
	return t.Execute(w, v)
}

// sent is when a request went, in ms from the release: its intended time in an open model,
// where intended times spread out, else when it reached the wire (all share one intended time).
func sent(at time.Time, r loadgen.Record, byIntended bool) float64 {
	switch {
	case byIntended:
		return millis(r.Intended.Sub(at))
	case !r.Written.IsZero():
		return millis(r.Written.Sub(at))
	}
	return millis(r.Started.Sub(at))
}

func latencyChart(at time.Time, recs []loadgen.Record, byIntended bool) chart {
	c := chart{Title: "Latency over time", YLabel: "done − intended (ms)", XLabel: "written, ms after the release"}
	if byIntended {
		c.XLabel = "intended, ms after the release"
	}
	every := max(1, (len(recs)+maxPoints-1)/maxPoints)
	if every > 1 {
		c.Note = fmt.Sprintf("every %d. request shown (%d in all)", every, len(recs))
	}
	var xmax, ymax float64
	for _, r := range recs {
		xmax, ymax = max(xmax, sent(at, r, byIntended)), max(ymax, millis(r.Latency()))
	}
	xs, ys := axis(xmax), axis(ymax)
	c.XTicks, c.YTicks = xTicks(xs), yTicks(ys)
	seen := map[outcome.Code]bool{}
	for i, r := range recs {
		if i%every != 0 {
			continue
		}
		seen[r.Outcome] = true
		c.Dots = append(c.Dots, dot{X: padL + sent(at, r, byIntended)/xs.max*plotW,
			Y: padT + plotH - millis(r.Latency())/ys.max*plotH, Color: colorOf(r.Outcome)})
	}
	c.Legend = outcomeLegend(seen)
	return c
}

func outcomesChart(at time.Time, recs []loadgen.Record) chart {
	c := chart{Title: "Outcomes over time", YLabel: "answers per bucket", XLabel: "answered, ms after the release"}
	var end time.Duration
	for _, r := range recs {
		end = max(end, r.Done.Sub(at))
	}
	// 50 ms buckets, wider for a long run so the chart stays a few hundred bars.
	width := max(minBucket, (end/maxBuckets+minBucket-1)/minBucket*minBucket)
	n := int(end/width) + 1
	counts := make([]map[outcome.Code]int, n)
	seen := map[outcome.Code]bool{}
	for _, r := range recs {
		b := int(max(0, r.Done.Sub(at)) / width)
		if counts[b] == nil {
			counts[b] = map[outcome.Code]int{}
		}
		counts[b][r.Outcome]++
		seen[r.Outcome] = true
	}
	var ymax float64
	for _, m := range counts {
		total := 0
		for _, k := range m {
			total += k
		}
		ymax = max(ymax, float64(total))
	}
	xs, ys := axis(float64(n)*millis(width)), axis(ymax)
	c.XTicks, c.YTicks = xTicks(xs), yTicks(ys)
	c.Note = fmt.Sprintf("%s buckets", width)
	bw := millis(width) / xs.max * plotW
	for i, m := range counts {
		y := padT + plotH
		for _, o := range outcomeOrder(seen) {
			if m[o] == 0 {
				continue
			}
			h := float64(m[o]) / ys.max * plotH
			y -= h
			c.Bars = append(c.Bars, bar{X: padL + float64(i)*bw, Y: y, W: math.Max(bw-0.5, 0.5), H: h, Color: colorOf(o),
				Title: fmt.Sprintf("%s %d at %s", o, m[o], time.Duration(i)*width)})
		}
	}
	c.Legend = outcomeLegend(seen)
	return c
}

func stockChart(at time.Time, recs []loadgen.Record) chart {
	c := chart{Title: "Stock depletion", YLabel: "units reserved (cumulative)", XLabel: "answered, ms after the release"}
	// Each reservation counts once, at its first RESERVED answer, as in the summary.
	firsts := map[string]loadgen.Record{}
	for _, r := range recs {
		if f, ok := firsts[grant(r)]; r.Outcome == outcome.Reserved && (!ok || r.Done.Before(f.Done)) {
			firsts[grant(r)] = r
		}
	}
	times := map[loadgen.Target][]float64{}
	var targets []loadgen.Target
	var xmax, ymax float64
	for _, r := range firsts {
		if times[r.Target] == nil {
			targets = append(targets, r.Target)
		}
		times[r.Target] = append(times[r.Target], millis(r.Done.Sub(at)))
		ymax = max(ymax, float64(len(times[r.Target])))
	}
	slices.SortFunc(targets, func(a, b loadgen.Target) int { return strings.Compare(a.String(), b.String()) })
	for _, r := range recs { // the whole burst, so the flat line after the sell-out shows
		xmax = max(xmax, millis(r.Done.Sub(at)))
	}
	xs, ys := axis(xmax), axis(ymax)
	c.XTicks, c.YTicks = xTicks(xs), yTicks(ys)
	for i, t := range targets {
		ts := times[t]
		slices.Sort(ts)
		x := func(ms float64) float64 { return padL + ms/xs.max*plotW }
		y := func(n int) float64 { return padT + plotH - float64(n)/ys.max*plotH }
		pts := fmt.Sprintf("%.1f,%.1f", x(0), y(0))
		for k, ms := range ts { // a step up at every reservation
			pts += fmt.Sprintf(" %.1f,%.1f %.1f,%.1f", x(ms), y(k), x(ms), y(k+1))
		}
		pts += fmt.Sprintf(" %.1f,%.1f", x(xmax), y(len(ts)))
		col := lineColor(i)
		label := fmt.Sprintf("%s: %d", t, len(ts))
		c.Lines = append(c.Lines, series{Points: pts, Color: col, Label: label})
		c.Legend = append(c.Legend, legend{Color: col, Label: label})
	}
	return c
}

// scale is an axis from 0 to max in steps of a round number (1, 2 or 5 times a power of ten).
type scale struct{ max, step float64 }

func axis(top float64) scale {
	if top <= 0 {
		return scale{max: 1, step: 1}
	}
	raw := top / 5
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	step := 10 * mag
	for _, m := range []float64{1, 2, 5} {
		if m*mag >= raw {
			step = m * mag
			break
		}
	}
	return scale{max: math.Ceil(top/step) * step, step: step}
}

func (s scale) ticks(pos func(v float64) float64) []tick {
	var out []tick
	for v := 0.0; v <= s.max+s.step/2; v += s.step {
		out = append(out, tick{Pos: pos(v), Label: strconv.FormatFloat(v, 'f', -1, 64)})
	}
	return out
}

func xTicks(s scale) []tick { return s.ticks(func(v float64) float64 { return padL + v/s.max*plotW }) }
func yTicks(s scale) []tick {
	return s.ticks(func(v float64) float64 { return padT + plotH - v/s.max*plotH })
}

// colorOf gives every outcome a fixed colour, so the charts of two runs compare at a glance:
// green for a sale, blues for a polite no, reds for failures.
func colorOf(c outcome.Code) string {
	switch c {
	case outcome.Reserved:
		return "#2e9e44"
	case outcome.SoldOut:
		return "#4a7fd4"
	case outcome.AlreadyPurchased:
		return "#8fb3ea"
	case outcome.NotAdmitted, outcome.RateLimited:
		return "#e0a526"
	case outcome.NotStarted, outcome.Paused:
		return "#9b6cd1"
	case loadgen.ClientError:
		return "#e07a26"
	case loadgen.ServerError:
		return "#d43c3c"
	case loadgen.Timeout:
		return "#8c1c1c"
	case loadgen.TransportError:
		return "#5a5a5a"
	}
	return "#b0b0b0"
}

// lineColor tells items apart in the stock chart.
func lineColor(i int) string {
	cs := []string{"#2e9e44", "#4a7fd4", "#d43c3c", "#e0a526", "#9b6cd1", "#3bb3b3"}
	return cs[i%len(cs)]
}

// outcomeOrder lists the outcomes seen in report order, unknown ones last by name.
func outcomeOrder(seen map[outcome.Code]bool) []outcome.Code {
	var out, extra []outcome.Code
	for _, c := range loadgen.Outcomes() {
		if seen[c] {
			out = append(out, c)
		}
	}
	for c := range seen {
		if !slices.Contains(out, c) {
			extra = append(extra, c)
		}
	}
	slices.Sort(extra)
	return append(out, extra...)
}

func outcomeLegend(seen map[outcome.Code]bool) []legend {
	var out []legend
	for _, c := range outcomeOrder(seen) {
		out = append(out, legend{Color: colorOf(c), Label: string(c)})
	}
	return out
}
