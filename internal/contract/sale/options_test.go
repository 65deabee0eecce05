package sale

import (
	"testing"
	"time"
)

// TestSaleOptions: perSaleLimit and reveal parse with their defaults, and out-of-range values are
// refused naming the field and its line.
func TestSaleOptions(t *testing.T) {
	const head = "id: s1\nopensAt: 2026-12-01T12:00:00Z\nitems: [{id: a, quantity: 1}]\n"
	tests := []struct {
		name, yaml string
		perSale    int
		reveal     time.Duration // 0: reveal off
		err        string
	}{
		{"neither", head, 0, 0, ""},
		{"one per sale", head + "perSaleLimit: 1\n", 1, 0, ""},
		{"the most", head + "perSaleLimit: 16\n", 16, 0, ""},
		{"negative", head + "perSaleLimit: -1\n", 0, 0, "line 4: perSaleLimit: sale s1: perSaleLimit -1: must be between 1 and 16"},
		{"too many", head + "perSaleLimit: 17\n", 0, 0, "line 4: perSaleLimit: sale s1: perSaleLimit 17"},
		{"reveal defaults its ttl", head + "reveal: {enabled: true}\n", 0, DefaultRevealTTL, ""},
		{"reveal ttl", head + "reveal:\n  enabled: true\n  ttl: 45s\n", 0, 45 * time.Second, ""},
		{"reveal ttl too short", head + "reveal:\n  enabled: true\n  ttl: 500ms\n", 0, 0, "line 6: reveal.ttl: sale s1: reveal: ttl 500ms: must be between 1s and 1h0m0s"},
		{"reveal ttl too long", head + "reveal: {enabled: true, ttl: 2h}\n", 0, 0, "reveal: ttl 2h0m0s"},
		{"reveal unknown field", head + "reveal: {enabled: true, path: x}\n", 0, 0, "line 4: reveal.path: unknown key (known: enabled, ttl)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, ok := parseCase(t, tc.yaml, tc.err)
			if !ok {
				return
			}
			if s.PerSaleLimit != tc.perSale || s.Reveal.Enabled != (tc.reveal > 0) || s.Reveal.TTL != tc.reveal {
				t.Fatalf("perSaleLimit %d, reveal %+v; want %d, %s", s.PerSaleLimit, s.Reveal, tc.perSale, tc.reveal)
			}
		})
	}
}
