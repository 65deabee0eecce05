package warroom

import (
	"image/color"
	"math"
	"strings"

	"charm.land/lipgloss/v2"
	"github.com/charmbracelet/x/ansi"
)

// Colours of the dashboard.
var (
	colPaid   = lipgloss.Color("#5fafff")
	colHeld   = lipgloss.Color("#ffaf00")
	colLeft   = lipgloss.Color("#5fd75f")
	colDim    = lipgloss.Color("#808080")
	colWarn   = lipgloss.Color("#ffd700")
	colCrit   = lipgloss.Color("#ff5f5f")
	colOK     = lipgloss.Color("#5fd75f")
	colBorder = lipgloss.Color("#5f5f87")
)

func fg(c color.Color) lipgloss.Style { return lipgloss.NewStyle().Foreground(c) }

// stockBar draws an item's units as one bar: paid, held, remaining, and the rest (units the bar
// cannot place, such as units in an unknown state) dim, scaled to width cells.
func stockBar(quantity, paid, held, remaining int64, width int) string {
	if width <= 0 {
		return ""
	}
	if quantity <= 0 {
		return fg(colDim).Render(strings.Repeat("·", width))
	}
	cells := func(n int64) int { return int(math.Round(float64(max(n, 0)) * float64(width) / float64(quantity))) }
	p, h, r := cells(paid), cells(held), cells(remaining)
	for p+h+r > width { // rounding can overshoot by a cell or two
		switch {
		case r >= h && r >= p:
			r--
		case h >= p:
			h--
		default:
			p--
		}
	}
	rest := width - p - h - r
	return fg(colPaid).Render(strings.Repeat("█", p)) + fg(colHeld).Render(strings.Repeat("▓", h)) +
		fg(colLeft).Render(strings.Repeat("░", r)) + fg(colDim).Render(strings.Repeat("·", rest))
}

var sparkRunes = []rune("▁▂▃▄▅▆▇█")

// sparkline draws the last width values scaled to the largest of them; an empty history is blank.
func sparkline(values []float64, width int) string {
	if width <= 0 {
		return ""
	}
	if len(values) > width {
		values = values[len(values)-width:]
	}
	top := 0.0
	for _, v := range values {
		top = math.Max(top, v)
	}
	var b strings.Builder
	b.WriteString(strings.Repeat(" ", width-len(values)))
	for _, v := range values {
		i := 0
		if top > 0 {
			i = int(math.Round(v / top * float64(len(sparkRunes)-1)))
		}
		b.WriteRune(sparkRunes[min(max(i, 0), len(sparkRunes)-1)])
	}
	return b.String()
}

// box frames body with a titled border of exactly width × height cells, wrapping long lines and
// clipping what does not fit.
func box(title, body string, width, height int, border color.Color) string {
	iw, ih := max(width-2, 1), max(height-2, 0)
	var lines []string
	for _, l := range strings.Split(body, "\n") {
		lines = append(lines, strings.Split(ansi.Wrap(l, iw, " "), "\n")...)
	}
	if len(lines) > ih {
		lines = lines[:ih]
	}
	for len(lines) < ih {
		lines = append(lines, "")
	}
	bs := fg(border)
	t := ansi.Truncate(" "+title+" ", iw, "")
	var b strings.Builder
	b.WriteString(bs.Render("╭" + t + strings.Repeat("─", max(iw-ansi.StringWidth(t), 0)) + "╮"))
	for _, l := range lines {
		l = ansi.Truncate(l, iw, "…")
		b.WriteString("\n" + bs.Render("│") + l + strings.Repeat(" ", max(iw-ansi.StringWidth(l), 0)) + bs.Render("│"))
	}
	b.WriteString("\n" + bs.Render("╰"+strings.Repeat("─", iw)+"╯"))
	return b.String()
}

// pad fits s to exactly width cells.
func pad(s string, width int) string {
	s = ansi.Truncate(s, width, "")
	return s + strings.Repeat(" ", max(width-ansi.StringWidth(s), 0))
}

// stateLine renders a source that has no data: down (with why) or not available.
func stateLine(st Status) string {
	switch st.State {
	case Down:
		return fg(colCrit).Bold(true).Render("DOWN") + " " + fg(colDim).Render(st.Error)
	case NotAvailable:
		if st.Reason != "" {
			return fg(colDim).Render("not available: " + st.Reason)
		}
		return fg(colDim).Render("not available on this target")
	}
	return fg(colDim).Render("waiting for the first reading…")
}
