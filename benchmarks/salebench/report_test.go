package main

import (
	"io"
	"os"
	"strings"
	"testing"
	"time"
)

func TestCellGivesTheMedianAndTheRange(t *testing.T) {
	for _, c := range []struct {
		format string
		vals   []float64
		want   string
	}{
		{"%.1f", []float64{42.0}, "42.0"},
		{"%.1f", []float64{44.3, 39.8, 59.0}, "44.3 (39.8-59.0)"},
		{"%.0f", []float64{2701, 2484, 3300, 2600}, "2650 (2484-3300)"},
		{"%.2f", []float64{0.23, 0.23}, "0.23 (0.23-0.23)"},
	} {
		vals := append([]float64(nil), c.vals...)
		if got := cell(c.format, c.vals); got != c.want {
			t.Errorf("cell(%q, %v) = %q, want %q", c.format, c.vals, got, c.want)
		}
		for i := range vals {
			if vals[i] != c.vals[i] {
				t.Errorf("cell(%q, %v) reordered the rounds: %v", c.format, vals, c.vals)
			}
		}
	}
}

// TestRatiosPairTheRoundsThatRanTogether: each ratio is a round of after over the round of
// before beside it, not a median over a median, and a round whose before figure is 0 has none.
func TestRatiosPairTheRoundsThatRanTogether(t *testing.T) {
	rounds := func(ceilings ...float64) []round {
		var rs []round
		for _, c := range ceilings {
			rs = append(rs, round{ceiling: c})
		}
		return rs
	}
	ceiling := func(r round) float64 { return r.ceiling }
	for _, c := range []struct {
		before, after []round
		want          string
	}{
		{rounds(100, 200), rounds(200, 100), "1.25 (0.50-2.00)"}, // the medians' ratio would say 1.00
		{rounds(100, 0, 50), rounds(50, 10, 50), "0.75 (0.50-1.00)"},
		{rounds(100, 100, 100), rounds(80), "0.80"},
		{rounds(0), rounds(10), "-"},
	} {
		if got := ratioCell(ratios(c.before, c.after, ceiling)); got != c.want {
			t.Errorf("ratios(%v, %v) = %q, want %q", c.before, c.after, got, c.want)
		}
	}
}

// TestCompareTabulatesEveryFigure: the ratio table has a row for every figure and a column for
// every burst, each the rounds' own ratio, and a figure the earlier build lacks shows "-".
func TestCompareTabulatesEveryFigure(t *testing.T) {
	round1 := func(serverCPU time.Duration, ceiling float64) round {
		return round{ceiling: ceiling, soldOutCPU: serverCPU, bursts: []burst{
			{units: 100, sold: 100, requests: 1000, serverCPU: 1000 * serverCPU},
			{units: 10000, sold: 10000, requests: 1000, serverCPU: 2000 * serverCPU},
		}}
	}
	before := []round{round1(40*time.Microsecond, 100), round1(80*time.Microsecond, 100)}
	after := []round{round1(20*time.Microsecond, 100), round1(60*time.Microsecond, 50)}
	out := captureStdout(t, func() { compare(options{buyers: 50000}, before, after) })
	for _, want := range []string{
		"measure  50000 -> 100 units  50000 -> 10000 units",
		"server CPU per request (us)    0.62 (0.50-0.75)      0.62 (0.50-0.75)",
		"units sold    1.00 (1.00-1.00)      1.00 (1.00-1.00)",
		"generator CPU per request (us)                   -                     -",
		"the /healthz ceiling 0.75 (0.50-1.00)x; the sold-out path, server CPU a request 0.62 (0.50-0.75)x",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the comparison lacks %q:\n%s", want, out)
		}
	}
	if rows := strings.Count(out, "\n"); rows != len(figures)+5 {
		t.Errorf("%d lines, want a row for each of the %d figures and 5 more:\n%s", rows, len(figures), out)
	}
}

func captureStdout(t *testing.T, f func()) string {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout := os.Stdout
	os.Stdout = w
	f()
	os.Stdout = stdout
	_ = w.Close()
	b, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
