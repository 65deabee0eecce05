package blast

import (
	"bytes"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/fsctl/fsctl/internal/contract/outcome"
	"github.com/fsctl/fsctl/internal/platform/table"
)

// TestLatencyTableFitsTheTerminal: at 80 columns the latency table leaves out its tails past p99
// (and says so) instead of running past the edge; a pipe still gets every column.
func TestLatencyTableFitsTheTerminal(t *testing.T) {
	d := Dist{Min: 1.2, Mean: 650.2, P50: 650.2, P90: 1045.5, P99: 1109.0, P999: 1110.2, P9999: 1111.0, Max: 1111.0}
	s := Summary{Outcomes: []OutcomeRow{{Outcome: outcome.Reserved, Count: 100, Latency: d}, {Outcome: outcome.SoldOut, Count: 4900, Latency: d}},
		Requests: 5000, Latency: d}
	tableLines := func(out string) (widest int) {
		for _, l := range strings.Split(out, "\n") {
			if strings.ContainsAny(l, "│┌└├") {
				widest = max(widest, utf8.RuneCountInString(l))
			}
		}
		return widest
	}
	var pipe, term bytes.Buffer
	if err := s.Render(&pipe); err != nil {
		t.Fatal(err)
	}
	if err := s.Render(table.Sized{Writer: &term, Columns: 80}); err != nil {
		t.Fatal(err)
	}
	if w := tableLines(pipe.String()); w <= 80 || !strings.Contains(pipe.String(), "P99.99 MS") {
		t.Fatalf("the whole table is %d wide: not wide enough to prove anything\n%s", w, pipe.String())
	}
	if w := tableLines(term.String()); w > 80 || strings.Contains(term.String(), "│ P99.99 MS") || !strings.Contains(term.String(), "left out to fit 80 columns: P99.99 MS") {
		t.Errorf("at 80 columns the table is %d wide:\n%s", w, term.String())
	}
}
