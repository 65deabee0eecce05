package main

import "testing"

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
