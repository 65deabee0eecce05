package warroom

import (
	"fmt"
	"strings"
	"time"

	"github.com/charmbracelet/x/ansi"
)

// event is one line of the event log.
type event struct {
	at    time.Time
	level string // "info", Warn or Crit
	text  string
}

// eventLog keeps the latest events, newest last.
type eventLog struct {
	events []event
	size   int
}

func (l *eventLog) add(at time.Time, level, format string, a ...any) {
	l.events = append(l.events, event{at: at, level: level, text: fmt.Sprintf(format, a...)})
	if len(l.events) > l.size {
		l.events = l.events[len(l.events)-l.size:]
	}
}

// observe logs what changed between two snapshots: sources going down or coming back, alerts
// raised and cleared.
func (l *eventLog) observe(prev, cur *Snapshot) {
	var before []NamedStatus
	if prev != nil {
		before = prev.Readings()
	}
	for i, r := range cur.Readings() {
		was := State("")
		if before != nil {
			was = before[i].State
		}
		switch {
		case r.State == Down && was != Down:
			l.add(cur.At, Crit, "%s source down: %s", r.Name, r.Error)
		case r.State == OK && was == Down:
			l.add(cur.At, "info", "%s source back", r.Name)
		}
	}
	old := map[string]Alert{}
	if prev != nil {
		for _, a := range prev.Alerts {
			old[a.Metric] = a
		}
	}
	now := map[string]bool{}
	for _, a := range cur.Alerts {
		now[a.Metric] = true
		if o, ok := old[a.Metric]; !ok || o.Level != a.Level {
			l.add(cur.At, a.Level, "ALERT %s", a)
		}
	}
	for m, a := range old {
		if !now[m] {
			l.add(cur.At, "info", "cleared %s (was %s)", m, a.Level)
		}
	}
}

func (l eventLog) view(s *Snapshot, lines, width int) string {
	var out []string
	for _, a := range s.Alerts {
		c := colWarn
		if a.Level == Crit {
			c = colCrit
		}
		out = append(out, fg(c).Bold(true).Render("● "+a.String()))
	}
	if len(s.Alerts) == 0 {
		out = append(out, fg(colOK).Render("● no alerts"))
	}
	room := max(lines-len(out), 0)
	ev := l.events
	if len(ev) > room {
		ev = ev[len(ev)-room:]
	}
	for _, e := range ev {
		c := colDim
		switch e.level {
		case Warn:
			c = colWarn
		case Crit:
			c = colCrit
		}
		// One line per event, cut to the pane, so the newest event is never wrapped out of view.
		out = append(out, ansi.Truncate(fg(colDim).Render(e.at.UTC().Format("15:04:05"))+" "+fg(c).Render(e.text), width, "…"))
	}
	return strings.Join(out, "\n")
}
