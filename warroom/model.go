package warroom

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync"
	"time"

	"charm.land/bubbles/v2/help"
	"charm.land/bubbles/v2/key"
	"charm.land/bubbles/v2/textinput"
	tea "charm.land/bubbletea/v2"
)

// Defaults of the dashboard's refresh.
const (
	DefaultInterval  = 250 * time.Millisecond
	DefaultSlowEvery = 4 // slow sources (Redis snapshot, PostgreSQL, admin state) at 1 Hz
)

// Options configure the dashboard model.
type Options struct {
	Sources Sources
	Alerts  AlertConfig
	// Interval is the refresh tick (DefaultInterval when zero); SlowEvery ticks read the slow
	// sources too (DefaultSlowEvery when zero). A negative Interval turns the clock off: the model
	// shows only the snapshots sent to it (tests, replays of a record).
	Interval  time.Duration
	SlowEvery int
	// Timeout bounds each probe and each operator action (DefaultProbeTimeout when zero).
	Timeout time.Duration
	// Now is the clock (time.Now when nil).
	Now func() time.Time
	// Record, when set, receives every snapshot the dashboard shows (the --records timeline).
	Record func(Snapshot) error
	// Context bounds every probe and action (context.Background when nil).
	Context context.Context
}

// Messages of the model; every I/O result comes back as one of them.
type (
	// tickMsg is the refresh clock.
	tickMsg struct{ at time.Time }
	// SnapshotMsg carries a collected snapshot (fast-only when the slow sources were skipped).
	SnapshotMsg struct{ Snapshot Snapshot }
	// ActionDoneMsg reports an operator action's result.
	ActionDoneMsg struct {
		Label string
		Err   error
	}
	// recordFailedMsg reports that the timeline could not be written.
	recordFailedMsg struct{ err error }
)

// action is an operator action waiting for confirmation.
type action struct {
	label string
	run   func(context.Context, ControlSource) error
}

// Model is the dashboard: the root bubbletea model holding one child per panel.
type Model struct {
	opt           Options
	keys          keyMap
	help          help.Model
	input         textinput.Model
	width, height int

	snap       *Snapshot
	ticks      int
	collecting bool
	forceSlow  bool
	alerter    *Alerter
	items      itemsPanel
	log        eventLog
	pending    *action // awaiting y/n
	editing    bool    // typing an admission rate
	recordMu   *sync.Mutex
}

// New returns the dashboard model.
func New(o Options) Model {
	if o.Interval == 0 {
		o.Interval = DefaultInterval
	}
	if o.SlowEvery <= 0 {
		o.SlowEvery = DefaultSlowEvery
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultProbeTimeout
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Context == nil {
		o.Context = context.Background()
	}
	in := textinput.New()
	in.Prompt = "admission rate (buyers/s): "
	in.CharLimit = 12
	return Model{opt: o, keys: newKeyMap(), help: help.New(), input: in, width: 120, height: 40,
		items: newItemsPanel(60), log: eventLog{size: 200}, recordMu: &sync.Mutex{}, alerter: NewAlerter(o.Alerts)}
}

// Init starts the first full collection and the refresh clock.
func (m Model) Init() tea.Cmd {
	if m.opt.Interval < 0 {
		return nil
	}
	return tea.Batch(m.collect(false), m.tick())
}

func (m Model) tick() tea.Cmd {
	return tea.Tick(m.opt.Interval, func(t time.Time) tea.Msg { return tickMsg{at: t} })
}

// collect reads the sources in a Cmd; fastOnly skips the slow ones.
func (m Model) collect(fastOnly bool) tea.Cmd {
	src, o := m.opt.Sources, CollectOptions{Timeout: m.opt.Timeout, FastOnly: fastOnly, Now: m.opt.Now}
	ctx := m.opt.Context
	return func() tea.Msg { return SnapshotMsg{Snapshot: Collect(ctx, src, o)} }
}

// Update is the model's one entry point: a type switch over messages, ending in a batch of commands.
func (m Model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	var cmds []tea.Cmd
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		m.width, m.height = msg.Width, msg.Height
		m.help.SetWidth(msg.Width)
	case tickMsg:
		if m.opt.Interval < 0 {
			break
		}
		m.ticks++
		cmds = append(cmds, m.tick())
		if !m.collecting {
			slow := m.forceSlow || m.ticks%m.opt.SlowEvery == 0
			m.collecting, m.forceSlow = true, false
			cmds = append(cmds, m.collect(!slow))
		}
	case SnapshotMsg:
		m.collecting = false
		cmds = append(cmds, m.observe(msg.Snapshot))
	case ActionDoneMsg:
		if msg.Err != nil {
			m.log.add(m.opt.Now(), Crit, "%s failed: %v", msg.Label, msg.Err)
		} else {
			m.log.add(m.opt.Now(), Warn, "%s: done", msg.Label)
		}
		m.forceSlow = true // show the new operator state on the next tick
	case recordFailedMsg:
		m.log.add(m.opt.Now(), Crit, "record: %v", msg.err)
	case tea.KeyPressMsg:
		var cmd tea.Cmd
		m, cmd = m.handleKey(msg)
		cmds = append(cmds, cmd)
	}
	return m, tea.Batch(cmds...)
}

// observe merges a new snapshot over the last one, derives rates and alerts, logs what changed and
// returns the command that records it.
func (m *Model) observe(s Snapshot) tea.Cmd {
	prev := m.snap
	s.Merge(prev)
	Derive(prev, &s)
	s.Alerts = m.alerter.Evaluate(&s)
	m.items.observe(&s, prev == nil || !s.Items.At.Equal(prev.Items.At))
	m.log.observe(prev, &s)
	m.snap = &s
	if m.opt.Record == nil {
		return nil
	}
	rec, mu := m.opt.Record, m.recordMu
	return func() tea.Msg {
		mu.Lock()
		defer mu.Unlock()
		if err := rec(s); err != nil {
			return recordFailedMsg{err: err}
		}
		return nil
	}
}

// Snapshot returns the latest merged snapshot (nil before the first).
func (m Model) Snapshot() *Snapshot { return m.snap }

func (m Model) handleKey(msg tea.KeyPressMsg) (Model, tea.Cmd) {
	now := m.opt.Now()
	switch {
	case m.editing:
		return m.handleRateInput(msg)
	case m.pending != nil:
		switch {
		case key.Matches(msg, m.keys.Yes):
			a := m.pending
			m.pending = nil
			m.log.add(now, Warn, "operator: %s", a.label)
			return m, m.runAction(*a)
		case key.Matches(msg, m.keys.No):
			m.log.add(now, "info", "cancelled: %s", m.pending.label)
			m.pending = nil
		}
		return m, nil
	case key.Matches(msg, m.keys.Quit):
		return m, tea.Quit
	case key.Matches(msg, m.keys.Help):
		m.help.ShowAll = !m.help.ShowAll
	case key.Matches(msg, m.keys.Refresh):
		m.forceSlow = true
	case key.Matches(msg, m.keys.PauseSale):
		if c, ok := m.control(); ok {
			verb := map[bool]string{true: "resume", false: "pause"}[c.Paused]
			m.ask(verb+" sale "+m.opt.Sources.Sale, func(ctx context.Context, cs ControlSource) error { return cs.PauseSale(ctx, !c.Paused) })
		}
	case key.Matches(msg, m.keys.PauseRoom):
		if c, ok := m.control(); ok {
			if c.Room == nil {
				m.log.add(now, "info", "sale %s has no waiting room", m.opt.Sources.Sale)
				break
			}
			paused := !c.Room.Paused
			verb := map[bool]string{true: "pause", false: "resume"}[paused]
			m.ask(verb+" admission", func(ctx context.Context, cs ControlSource) error { return cs.SetRoom(ctx, &paused, nil) })
		}
	case key.Matches(msg, m.keys.Rate):
		if c, ok := m.control(); ok {
			if c.Room == nil {
				m.log.add(now, "info", "sale %s has no waiting room", m.opt.Sources.Sale)
				break
			}
			m.editing = true
			m.input.SetValue(num(c.Room.Rate))
			m.input.CursorEnd()
			return m, m.input.Focus()
		}
	case key.Matches(msg, m.keys.Switch1, m.keys.Switch2, m.keys.Switch3, m.keys.Switch4):
		if c, ok := m.control(); ok {
			name := m.keys.switchFor(int(msg.String()[0] - '1'))
			off := !c.Switches[name]
			verb := map[bool]string{true: "throw kill switch " + name + " (turn " + name + " OFF)", false: "reset kill switch " + name + " (turn " + name + " back ON)"}[off]
			m.ask(verb, func(ctx context.Context, cs ControlSource) error { return cs.SetSwitch(ctx, name, off) })
		}
	}
	return m, nil
}

// control returns the operator state an action toggles; when it is unknown the action is refused
// with a line in the event log rather than guessed.
func (m *Model) control() (Control, bool) {
	if m.opt.Sources.Control == nil {
		m.log.add(m.opt.Now(), "info", "operator actions are not available on this target")
		return Control{}, false
	}
	if m.snap == nil || !m.snap.Control.OK() {
		m.log.add(m.opt.Now(), Warn, "operator state unknown (admin API not read); action refused")
		return Control{}, false
	}
	return m.snap.Control.Data, true
}

func (m *Model) ask(label string, run func(context.Context, ControlSource) error) {
	m.pending = &action{label: label, run: run}
}

func (m Model) handleRateInput(msg tea.KeyPressMsg) (Model, tea.Cmd) {
	switch msg.String() {
	case "esc":
		m.editing = false
		m.input.Blur()
		return m, nil
	case "enter":
		m.editing = false
		m.input.Blur()
		rate, err := parseRate(m.input.Value())
		if err != nil {
			m.log.add(m.opt.Now(), Warn, "admission rate %q: %v", m.input.Value(), err)
			return m, nil
		}
		m.ask("set admission rate to "+num(rate)+"/s", func(ctx context.Context, cs ControlSource) error { return cs.SetRoom(ctx, nil, &rate) })
		return m, nil
	}
	var cmd tea.Cmd
	m.input, cmd = m.input.Update(msg)
	return m, cmd
}

func (m Model) runAction(a action) tea.Cmd {
	cs, ctx, timeout := m.opt.Sources.Control, m.opt.Context, m.opt.Timeout
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(ctx, 2*timeout)
		defer cancel()
		return ActionDoneMsg{Label: a.label, Err: a.run(ctx, cs)}
	}
}

// parseRate reads an admission rate typed by the operator: a positive number of buyers per second.
func parseRate(s string) (float64, error) {
	v, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	if err != nil || v <= 0 || math.IsInf(v, 0) || math.IsNaN(v) {
		return 0, fmt.Errorf("want a positive number of buyers per second")
	}
	return v, nil
}
