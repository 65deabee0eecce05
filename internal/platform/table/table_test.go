package table

import (
	"bytes"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/olekukonko/tablewriter"
	"github.com/olekukonko/tablewriter/pkg/twwidth"
	"github.com/olekukonko/tablewriter/tw"
)

const detail = "redis at 127.0.0.1:16379 answered in 1.2ms but its maxmemory-policy is allkeys-lru, which may evict a sale's stock keys under memory pressure"

func findings(w *bytes.Buffer, columns int) *Table {
	t := New(Sized{w, columns}, "check", "status", "detail", "how to fix").Wrap("detail", 60).Wrap("how to fix", 44)
	_ = t.Append("redis memory policy", "WARN", detail, "CONFIG SET maxmemory-policy noeviction (or volatile-lru) on /var/lib/redis/a-very-long-path-without-spaces/redis.conf")
	_ = t.Append("postgres", "PASS", "reachable", "")
	return t
}

// lines is the rendered table's lines and its widest.
func lines(t *testing.T, out string) ([]string, int) {
	t.Helper()
	ls := strings.Split(strings.TrimRight(out, "\n"), "\n")
	w := 0
	for _, l := range ls {
		w = max(w, twwidth.Width(l))
	}
	return ls, w
}

// columnText is the text of column c of a rendered table's rows, line after line, spaces gone.
func columnText(out string, c int) string {
	var b strings.Builder
	for _, l := range strings.Split(out, "\n") {
		if cells := strings.Split(l, "│"); len(cells) > c+1 {
			b.WriteString(strings.ReplaceAll(cells[c+1], " ", ""))
		}
	}
	return b.String()
}

func TestAWideTableWrapsItsLongColumnsToFit(t *testing.T) {
	var wide, narrow bytes.Buffer
	if err := findings(&wide, 0).Render(); err != nil {
		t.Fatal(err)
	}
	if err := findings(&narrow, 80).Render(); err != nil {
		t.Fatal(err)
	}
	_, w := lines(t, wide.String())
	if w <= 80 {
		t.Fatalf("the test's table is %d wide without a limit: it proves nothing at 80", w)
	}
	ls, w := lines(t, narrow.String())
	if w > 80 {
		t.Errorf("%d columns wide at 80:\n%s", w, narrow.String())
	}
	// Nothing is lost: every character of every cell is still there, only wrapped.
	for c, s := range map[int]string{2: detail, 3: "/var/lib/redis/a-very-long-path-without-spaces/redis.conf"} {
		if !strings.Contains(columnText(narrow.String(), c), strings.ReplaceAll(s, " ", "")) {
			t.Errorf("%q is not all there:\n%s", s, narrow.String())
		}
	}
	if len(ls) <= len(strings.Split(wide.String(), "\n")) || strings.Contains(narrow.String(), "left out") {
		t.Errorf("it should wrap, not drop:\n%s", narrow.String())
	}
}

func TestColumnsAreLeftOutInTheOrderGiven(t *testing.T) {
	header := []string{"OUTCOME", "REQUESTS", "MIN MS", "MEAN MS", "P50 MS", "P90 MS", "P99 MS", "P99.9 MS", "P99.99 MS", "MAX MS"}
	render := func(columns int) string {
		var b bytes.Buffer
		tb := New(Sized{&b, columns}, header...).With(tablewriter.WithHeaderAutoFormat(tw.Off)).Drop("P99.99 MS", "P99.9 MS", "MIN MS", "MEAN MS", "P90 MS")
		if err := tb.Append("SOLD_OUT", "4900", "12.1", "650.2", "650.2", "1045.5", "1109.0", "1110.2", "1111.0", "1111.0"); err != nil {
			t.Fatal(err)
		}
		if err := tb.Render(); err != nil {
			t.Fatal(err)
		}
		return b.String()
	}
	for _, tc := range []struct {
		columns int
		gone    []string
	}{
		{200, nil},
		{80, []string{"P99.99 MS", "P99.9 MS"}},
		{60, []string{"P99.99 MS", "P99.9 MS", "MIN MS", "MEAN MS"}},
	} {
		out := render(tc.columns)
		note := strings.Join(strings.Fields(out[strings.LastIndex(out, "┘")+len("┘"):]), " ") // the note, one line
		if _, w := lines(t, out); w > tc.columns {
			t.Errorf("%d columns wide at %d:\n%s", w, tc.columns, out)
		}
		for _, h := range header {
			if gone := !strings.Contains(out, "│ "+h+" "); gone != strings.Contains(strings.Join(tc.gone, ","), h) {
				t.Errorf("at %d, %s shown: %v; want left out: %v\n%s", tc.columns, h, !gone, tc.gone, out)
			}
		}
		if want := fmt.Sprintf("(left out to fit %d columns: %s)", tc.columns, strings.Join(tc.gone, ", ")); len(tc.gone) > 0 && note != want || len(tc.gone) == 0 && note != "" {
			t.Errorf("at %d the note does not say %v:\n%s", tc.columns, tc.gone, out)
		}
	}
	// Too narrow for anything: printed as it is, after every droppable column went.
	if out := render(20); !strings.Contains(out, "P99 MS") || !strings.HasSuffix(strings.Join(strings.Fields(out), " "), "P90 MS)") {
		t.Errorf("at 20:\n%s", out)
	}
}

func TestOnlyATerminalHasAWidth(t *testing.T) {
	f, err := os.Create(t.TempDir() + "/report.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	t.Setenv("COLUMNS", "80")
	if w := Width(f); w != 0 {
		t.Errorf("a file is %d columns wide, want 0 (no limit: a file gets the whole table)", w)
	}
	if w := Width(&bytes.Buffer{}); w != 0 {
		t.Errorf("a buffer is %d wide", w)
	}
	if w := Width(Sized{nil, 72}); w != 72 {
		t.Errorf("Sized 72 is %d wide", w)
	}
}

func TestAMistakeInTheTableIsAnError(t *testing.T) {
	var b bytes.Buffer
	if err := New(&b, "a", "b").Drop("c").Render(); err == nil {
		t.Error("a column that is not there: no error")
	}
	if err := New(&b, "a", "b").Append("1"); err == nil {
		t.Error("a short row: no error")
	}
}
