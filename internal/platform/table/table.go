// Package table prints the tables of fsctl's reports for people (tablewriter underneath), fitted
// to the terminal when stdout is one, so that a report reads at 80 columns as well as at 200.
package table

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/charmbracelet/x/term"
	"github.com/olekukonko/tablewriter"
	"github.com/olekukonko/tablewriter/pkg/twwidth"
	"github.com/olekukonko/tablewriter/tw"
)

// MinWrap is the narrowest a wrapping column gets (its text, without the padding) before a
// column is dropped instead: narrower, a detail reads one word a line.
const MinWrap = 16

// Sized is a writer that says how wide a table on it may be: what a test hands a report to
// render it at 80 columns without a terminal.
type Sized struct {
	io.Writer
	Columns int
}

// Width is the writer's width.
func (s Sized) Width() int { return s.Columns }

// Width is how many columns a table written to w may take: w's own when it says (Sized), the
// terminal's when w is one (its size; $COLUMNS when the size cannot be read), and 0, no limit, for
// a file or a pipe: those get every column whole, for a program or a wide viewer to read.
func Width(w io.Writer) int {
	switch w := w.(type) {
	case interface{ Width() int }:
		return w.Width()
	case *os.File:
		if !term.IsTerminal(w.Fd()) {
			return 0
		}
		if cols, _, err := term.GetSize(w.Fd()); err == nil && cols > 0 {
			return cols
		}
		cols, _ := strconv.Atoi(os.Getenv("COLUMNS"))
		return max(cols, 0)
	}
	return 0
}

// Table is one table of a report. It fits the width of its writer (Width) in one order, the same
// for every table:
//
//  1. the columns named by Wrap wrap their text at spaces (a word longer than the column, a path
//     or a URL, is broken), the widest first, down to MinWrap characters each;
//  2. then the columns named by Drop are left out, in the order given (the least important
//     first), and a line under the table names them (-o json still has them all);
//  3. a table that still does not fit is printed as it is.
type Table struct {
	w      io.Writer
	header []string
	rows   [][]string
	wrap   map[int]int // column → its widest text when it wraps (0: as wide as its text)
	drop   []int
	opts   []tablewriter.Option
	err    error
}

// New starts a table on w with these column names.
func New(w io.Writer, header ...string) *Table {
	return &Table{w: w, header: header, wrap: map[int]int{}}
}

// With passes tablewriter options through (a header not upper-cased, say).
func (t *Table) With(opts ...tablewriter.Option) *Table {
	t.opts = append(t.opts, opts...)
	return t
}

// Wrap names a column of long text that wraps to fit; atMost > 0 also wraps it at that many
// characters on any writer (a detail that would make even a wide table hard to read).
func (t *Table) Wrap(column string, atMost int) *Table {
	if i := t.column(column); i >= 0 {
		t.wrap[i] = atMost
	}
	return t
}

// Drop names the columns that may be left out to fit, the least important first.
func (t *Table) Drop(columns ...string) *Table {
	for _, c := range columns {
		if i := t.column(c); i >= 0 {
			t.drop = append(t.drop, i)
		}
	}
	return t
}

func (t *Table) column(name string) int {
	i := slices.Index(t.header, name)
	if i < 0 && t.err == nil {
		t.err = fmt.Errorf("table %v has no column %q", t.header, name)
	}
	return i
}

// Append adds a row, one cell a column.
func (t *Table) Append(cells ...any) error {
	if len(cells) != len(t.header) {
		return fmt.Errorf("table %v: a row of %d cells", t.header, len(cells))
	}
	row := make([]string, len(cells))
	for i, c := range cells {
		row[i] = fmt.Sprint(c)
	}
	t.rows = append(t.rows, row)
	return nil
}

// Render prints the table, fitted (see Table).
func (t *Table) Render() error {
	if t.err != nil {
		return t.err
	}
	width := Width(t.w)
	shown := make([]int, len(t.header))
	for i := range shown {
		shown[i] = i
	}
	text := map[int]int{} // a wrapping column's text width
	for c, atMost := range t.wrap {
		text[c] = t.natural(c)
		if atMost > 0 {
			text[c] = min(text[c], atMost)
		}
	}
	var dropped []string
	for {
		out, err := t.render(shown, text)
		if err != nil {
			return err
		}
		excess := widest(out) - width
		if width <= 0 || excess <= 0 || !t.shrink(shown, text, excess) && !t.dropOne(&shown, &dropped) {
			if len(dropped) > 0 {
				out.WriteString(wrapWords(fmt.Sprintf("(left out to fit %d columns: %s)", width, strings.Join(dropped, ", ")), width))
			}
			_, err = t.w.Write(out.Bytes())
			return err
		}
	}
}

// shrink takes up to excess characters off the widest wrapping column still shown and wider than
// MinWrap; false when none is.
func (t *Table) shrink(shown []int, text map[int]int, excess int) bool {
	best := -1
	for _, c := range shown {
		if w, ok := text[c]; ok && w > MinWrap && (best < 0 || w > text[best]) {
			best = c
		}
	}
	if best < 0 {
		return false
	}
	text[best] = max(MinWrap, text[best]-excess)
	return true
}

// dropOne leaves out the next droppable column still shown; false when none is left.
func (t *Table) dropOne(shown *[]int, dropped *[]string) bool {
	for _, c := range t.drop {
		if i := slices.Index(*shown, c); i >= 0 {
			*shown = slices.Delete(*shown, i, i+1)
			*dropped = append(*dropped, t.header[c])
			return true
		}
	}
	return false
}

// natural is the width of column c's widest line.
func (t *Table) natural(c int) int {
	w := widestLine(t.header[c])
	for _, r := range t.rows {
		w = max(w, widestLine(r[c]))
	}
	return w
}

// render lays out the shown columns, each wrapping column at its text width.
func (t *Table) render(shown []int, text map[int]int) (*bytes.Buffer, error) {
	var b bytes.Buffer
	widths := tw.Mapper[int, int]{}
	for i, c := range shown {
		if w, ok := text[c]; ok {
			widths[i] = w + 2 // tablewriter counts the padding in
		}
	}
	opts := append([]tablewriter.Option{tablewriter.WithRowAutoWrap(tw.WrapNormal), tablewriter.WithHeaderAutoWrap(tw.WrapNormal),
		tablewriter.WithColumnWidths(widths)}, t.opts...)
	tb := tablewriter.NewTable(&b, opts...)
	pick := func(row []string) []any {
		out := make([]any, len(shown))
		for i, c := range shown {
			out[i] = row[c]
			if w, ok := text[c]; ok {
				out[i] = breakLong(row[c], w)
			}
		}
		return out
	}
	tb.Header(pick(t.header)...)
	for _, r := range t.rows {
		if err := tb.Append(pick(r)...); err != nil {
			return nil, err
		}
	}
	return &b, tb.Render()
}

// breakLong splits every word longer than width (a path, a URL) into pieces that fit, one a line:
// the table wraps at spaces and would cut such a word short, losing its end.
func breakLong(s string, width int) string {
	lines := strings.Split(s, "\n")
	for l, line := range lines {
		words := strings.Split(line, " ")
		for i, w := range words {
			r := []rune(w)
			var parts []string
			for twwidth.Width(string(r)) > width && len(r) > width {
				parts, r = append(parts, string(r[:width])), r[width:]
			}
			words[i] = strings.Join(append(parts, string(r)), "\n")
		}
		lines[l] = strings.Join(words, " ")
	}
	return strings.Join(lines, "\n")
}

// wrapWords breaks s at spaces into lines of at most width, each ending in a newline.
func wrapWords(s string, width int) string {
	var b strings.Builder
	line := 0
	for i, w := range strings.Fields(s) {
		if n := twwidth.Width(w); i > 0 && line+1+n > width {
			b.WriteString("\n")
			line = 0
		} else if i > 0 {
			b.WriteString(" ")
			line++
		}
		b.WriteString(w)
		line += twwidth.Width(w)
	}
	return b.String() + "\n"
}

func widestLine(s string) int {
	w := 0
	for l := range strings.SplitSeq(s, "\n") {
		w = max(w, twwidth.Width(l))
	}
	return w
}

func widest(b *bytes.Buffer) int { return widestLine(strings.TrimRight(b.String(), "\n")) }
