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
