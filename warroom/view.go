package warroom

import (
	"fmt"
	"strings"

	tea "charm.land/bubbletea/v2"
	"charm.land/lipgloss/v2"
	"github.com/charmbracelet/x/ansi"
)

// View renders the dashboard in the alternate screen; bubbletea's renderer repaints only the cells
// that changed, so a refresh does not flicker.
func (m Model) View() tea.View {
	v := tea.NewView(m.Render())
	v.AltScreen = true
	v.WindowTitle = "fsctl warroom " + m.opt.Sources.Sale
	return v
}

// Render draws the dashboard as exactly height lines of width cells.
func (m Model) Render() string {
	w, h := max(m.width, 40), max(m.height, 10)
	s := m.snap
	if s == nil {
		s = &Snapshot{Sale: m.opt.Sources.Sale}
	}
	var rows []string
	rows = append(rows, pad(m.header(s), w))

	itemsH := 3
	if s.Items.OK() {
		itemsH = min(max(len(s.Items.Data), 1)+2, max(h/3, 3))
	}
	rows = append(rows, box("Items  "+legend(), m.items.view(s, w-2, itemsH-2), w, itemsH, borderFor("items", s, s.Items.Status)))

	const midH = 13
	c1, c2 := w*36/100, w*30/100
	c3 := w - c1 - c2
	right := lipgloss.JoinVertical(lipgloss.Left,
		box("Admission", admissionView(s), c2, 7, borderFor("admission", s, s.Admission.Status)),
		box("Payment", paymentView(s), c2, midH-7, borderFor("payment", s, s.Payment.Status)))
	rows = append(rows, lipgloss.JoinHorizontal(lipgloss.Top,
		box("Traffic", trafficView(s), c1, midH, borderFor("traffic", s, s.Traffic.Status)),
		right,
		box("Pipeline", pipelineView(s), c3, midH, borderFor("pipeline", s, s.Pipeline.Status, s.Orders.Status))))

	footer := []string{pad(m.prompt(s), w), m.help.View(m.keys)}
	footerH := strings.Count(strings.Join(footer, "\n"), "\n") + 1
	eventsH := max(h-1-itemsH-midH-footerH, 3)
	rows = append(rows, box("Alerts & events", m.log.view(s, eventsH-2, w-2), w, eventsH, borderFor("alerts", s)))
	rows = append(rows, footer...)

	lines := strings.Split(strings.Join(rows, "\n"), "\n")
	if len(lines) > h {
		lines = lines[:h]
	}
	for i, l := range lines {
		lines[i] = pad(l, w)
	}
	for len(lines) < h {
		lines = append(lines, strings.Repeat(" ", w))
	}
	return strings.Join(lines, "\n")
}

func legend() string {
	return fg(colPaid).Render("█ paid") + " " + fg(colHeld).Render("▓ held") + " " + fg(colLeft).Render("░ left")
}

func (m Model) header(s *Snapshot) string {
	title := lipgloss.NewStyle().Bold(true).Reverse(true).Render(" FSCTL WARROOM ")
	parts := []string{title, "sale " + lipgloss.NewStyle().Bold(true).Render(s.Sale)}
	if s.Profile != "" {
		parts = append(parts, "profile "+s.Profile)
	}
	if !s.At.IsZero() {
		parts = append(parts, s.At.UTC().Format("15:04:05")+" UTC")
	}
	if s.Control.OK() {
		c := s.Control.Data
		if c.Paused {
			parts = append(parts, fg(colCrit).Bold(true).Render("[SALE PAUSED]"))
		} else {
			parts = append(parts, fg(colOK).Render("[sale live]"))
		}
		if c.Room != nil && c.Room.Paused {
			parts = append(parts, fg(colWarn).Bold(true).Render("[ADMISSION PAUSED]"))
		}
		if off := offSwitches(c.Switches); off != "none" {
			parts = append(parts, fg(colCrit).Bold(true).Render("[OFF: "+off+"]"))
		}
	} else if s.Control.State != "" {
		parts = append(parts, fg(colDim).Render("[operator state: "+string(s.Control.State)+"]"))
	}
	crit, warn := 0, 0
	for _, a := range s.Alerts {
		if a.Level == Crit {
			crit++
		} else {
			warn++
		}
	}
	switch {
	case crit > 0:
		parts = append(parts, fg(colCrit).Bold(true).Render(fmt.Sprintf("%d CRIT", crit)))
	case warn > 0:
		parts = append(parts, fg(colWarn).Bold(true).Render(fmt.Sprintf("%d WARN", warn)))
	}
	return strings.Join(parts, "  ")
}

// prompt is the line above the help: the pending confirmation, the rate being typed, or the
// sources' states.
func (m Model) prompt(s *Snapshot) string {
	switch {
	case m.pending != nil:
		return lipgloss.NewStyle().Bold(true).Reverse(true).Foreground(colWarn).
			Render(" CONFIRM: "+m.pending.label+"? ") + "  y = yes, n/esc = no"
	case m.editing:
		return m.input.View() + fg(colDim).Render("  enter = next, esc = cancel")
	}
	var parts []string
	for _, r := range s.Readings() {
		c, mark := colDim, "·"
		switch r.State {
		case OK:
			c, mark = colOK, "●"
		case Late:
			c, mark = colWarn, "◐"
		case Down:
			c, mark = colCrit, "✖"
		case NotAvailable:
			mark = "○"
		}
		parts = append(parts, fg(c).Render(mark+" "+r.Name))
	}
	every := "refresh off"
	if m.opt.Interval > 0 {
		every = "refresh " + m.opt.Interval.String()
	}
	return ansi.Truncate(strings.Join(parts, " "), max(m.width, 40), "…") + fg(colDim).Render("   "+every)
}
