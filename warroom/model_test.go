package warroom

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"
)

// harness drives a Model's Update directly, running the commands it returns except the clock.
type harness struct {
	t   *testing.T
	m   Model
	f   *fakeSources
	clk *stepClock
}

func newHarness(t *testing.T, o Options) *harness {
	t.Helper()
	h := &harness{t: t, f: newFake(), clk: newClock()}
	if o.Sources.Sale == "" {
		o.Sources = h.f.sources()
	}
	if o.Alerts.Rules == nil {
		o.Alerts = DefaultAlerts()
	}
	o.Now = h.clk.Now
	h.m = New(o)
	h.send(tea.WindowSizeMsg{Width: 120, Height: 40})
	return h
}

// send updates the model with msg and returns the messages its commands produce (tick commands are
// not run: the test is the clock).
func (h *harness) send(msg tea.Msg) []tea.Msg {
	h.t.Helper()
	next, cmd := h.m.Update(msg)
	h.m = next.(Model)
	return run(cmd)
}

func run(cmd tea.Cmd) []tea.Msg {
	if cmd == nil {
		return nil
	}
	switch msg := cmd().(type) {
	case tea.BatchMsg:
		var out []tea.Msg
		for _, c := range msg {
			out = append(out, run(c)...)
		}
		return out
	case tickMsg, nil:
		return nil
	default:
		return []tea.Msg{msg}
	}
}

// refresh collects every source now (a second later than the last time) and feeds the snapshot in.
func (h *harness) refresh() {
	h.t.Helper()
	h.clk.Add(time.Second)
	h.send(SnapshotMsg{Snapshot: Collect(context.Background(), h.m.opt.Sources, CollectOptions{Now: h.clk.Now})})
}

func (h *harness) key(s string) []tea.Msg {
	h.t.Helper()
	var msgs []tea.Msg
	for _, r := range s {
		k := tea.KeyPressMsg{Code: r, Text: string(r)}
		switch r {
		case '\r':
			k = tea.KeyPressMsg{Code: tea.KeyEnter}
		case 0x1b:
			k = tea.KeyPressMsg{Code: tea.KeyEscape}
		}
		msgs = append(msgs, h.send(k)...)
	}
	return msgs
}

func (h *harness) screen() string { return ansi.Strip(h.m.Render()) }

func TestTicksReadSlowSourcesOnceASecond(t *testing.T) {
	h := newHarness(t, Options{Interval: time.Millisecond})
	var slow []bool
	for range 8 {
		for _, msg := range h.send(tickMsg{}) {
			s := msg.(SnapshotMsg).Snapshot
			slow = append(slow, s.Items.State != "")
			h.send(msg)
		}
	}
	want := []bool{false, false, false, true, false, false, false, true}
	if len(slow) != len(want) {
		t.Fatalf("%d collections for 8 ticks, want 8", len(slow))
	}
	for i := range want {
		if slow[i] != want[i] {
			t.Fatalf("tick %d read slow sources %v; want %v (every 4th)", i+1, slow, want)
		}
	}
	if got := h.m.Snapshot(); !got.Items.OK() || !got.Traffic.OK() {
		t.Fatalf("merged snapshot lost a source: %+v", got.Readings())
	}
}

func TestTickDoesNotStackCollections(t *testing.T) {
	h := newHarness(t, Options{Interval: time.Millisecond})
	first := h.send(tickMsg{})
	if len(first) != 1 {
		t.Fatalf("first tick: %d collections", len(first))
	}
	if again := h.send(tickMsg{}); len(again) != 0 {
		t.Fatalf("a tick during a collection started another: %v", again)
	}
}

func TestRatesVelocityAndDriftBetweenSnapshots(t *testing.T) {
	h := newHarness(t, Options{Interval: -1})
	h.refresh()
	h.f.items[0].Remaining, h.f.items[0].Held = 30, 30
	h.f.orders[0].Pending = 28
	h.f.traffic.Outcomes["RESERVED"] += 10
	h.f.traffic.Outcomes["INTERNAL"] = 2
	h.refresh()
	d := h.m.Snapshot().Derived
	if d.WindowSeconds != 1 || d.OutcomesPerSec["reserved"] != 10 || d.OutcomesPerSec["errors"] != 2 {
		t.Fatalf("rates over 1s: %+v", d)
	}
	if d.Items[0].UnitsPerSec != 10 || d.Items[0].SecondsToSoldOut != 3 {
		t.Fatalf("console velocity %+v, want 10/s and 3s to sold out", d.Items[0])
	}
	if d.MaxDrift != 0 || d.InFlight != 2 {
		t.Fatalf("drift %d in flight %d, want 0 and 2", d.MaxDrift, d.InFlight)
	}
	if !strings.Contains(h.screen(), "warn errors_per_sec 2 ≥ 1") {
		t.Fatalf("errors alert missing:\n%s", h.screen())
	}
}

// TestAStoppedSourceIsDownAtItsThirdMiss: a source that stops answering is late (◐, its last
// answer kept, no alert) for DownAfter-1 probes and DOWN, with the sources_down alert, at the
// DownAfter-th: the time --help states. The dashboard goes on meanwhile, and says when it is back.
func TestAStoppedSourceIsDownAtItsThirdMiss(t *testing.T) {
	h := newHarness(t, Options{Interval: -1})
	h.refresh()
	h.f.setDown("traffic", errors.New("dial tcp 127.0.0.1:1: connection refused"))
	for miss := 1; miss < DownAfter; miss++ {
		h.refresh()
		scr, s := h.screen(), h.m.Snapshot()
		if s.Traffic.State != Late || !s.Traffic.OK() || s.Traffic.Data.Outcomes["RESERVED"] != 105 {
			t.Fatalf("miss %d: traffic %s (data kept: %v), want late with its last answer", miss, s.Traffic.State, s.Traffic.OK())
		}
		if !strings.Contains(scr, "◐ traffic") || strings.Contains(scr, "sources_down") || strings.Contains(scr, "source down") {
			t.Fatalf("miss %d of %d: the dashboard cried wolf:\n%s", miss, DownAfter, scr)
		}
	}
	h.refresh()
	scr := h.screen()
	for _, want := range []string{"DOWN dial tcp 127.0.0.1:1", "traffic source down: dial tcp 127.0.0.1:1: connection refused", "✖ traffic", "warn sources_down 1 ≥ 1"} {
		if !strings.Contains(scr, want) {
			t.Errorf("miss %d: screen lacks %q:\n%s", DownAfter, want, scr)
		}
	}
	if !h.m.Snapshot().Items.OK() {
		t.Fatal("the other sources stopped")
	}
	h.f.setDown("traffic", nil)
	h.refresh()
	if scr := h.screen(); !strings.Contains(scr, "traffic source back") || !strings.Contains(scr, "cleared sources_down") {
		t.Fatalf("recovery not logged:\n%s", scr)
	}
}

// TestASlowSourceBelowTheRuleRaisesNothing: a source slower than the probe's timeout now and
// then (twice in a row at most, as a loaded box's Kafka was) never counts as down: no DOWN, no
// sources_down alert, in 30 probes. The probes really time out (the fake takes 4 × the timeout).
func TestASlowSourceBelowTheRuleRaisesNothing(t *testing.T) {
	h := newHarness(t, Options{Interval: -1})
	const timeout = 20 * time.Millisecond
	misses := 0
	for i := range 30 {
		slow := i%DownAfter != 0 // DownAfter-1 slow probes, then one in time
		h.f.mu.Lock()
		h.f.slowTraffic = 0
		if slow {
			h.f.slowTraffic = 4 * timeout
		}
		h.f.mu.Unlock()
		h.clk.Add(time.Second)
		h.send(SnapshotMsg{Snapshot: Collect(context.Background(), h.m.opt.Sources, CollectOptions{Now: h.clk.Now, Timeout: timeout})})
		s := h.m.Snapshot()
		if slow {
			misses++
			if s.Traffic.State != Late {
				t.Fatalf("probe %d timed out: traffic %s, want late", i+1, s.Traffic.State)
			}
		}
		if s.Traffic.State == Down || slices.ContainsFunc(s.Alerts, func(a Alert) bool { return a.Metric == "sources_down" }) {
			t.Fatalf("probe %d: a source slow below the rule counted down:\n%s", i+1, h.screen())
		}
	}
	if misses < 15 || strings.Contains(h.screen(), "source down") {
		t.Fatalf("%d probes missed; screen:\n%s", misses, h.screen())
	}
}

func TestAbsentSourceIsNotAvailableNotDown(t *testing.T) {
	f := newFake()
	src := f.sources()
	src.Pipeline, src.Payment, src.Control = nil, nil, nil
	h := newHarness(t, Options{Interval: -1, Sources: src})
	h.refresh()
	s := h.m.Snapshot()
	if s.Pipeline.State != NotAvailable || s.Payment.State != NotAvailable {
		t.Fatalf("nil sources: pipeline %q payment %q", s.Pipeline.State, s.Payment.State)
	}
	if strings.Contains(h.screen(), "DOWN") || !strings.Contains(h.screen(), "not available on this target") {
		t.Fatalf("absent sources must read 'not available', not DOWN:\n%s", h.screen())
	}
	if msgs := h.key("p"); len(msgs) != 0 || h.m.pending != nil {
		t.Fatal("an action ran without a control source")
	}
	if !strings.Contains(h.screen(), "operator actions are not available") {
		t.Fatalf("refusal not logged:\n%s", h.screen())
	}
}

func TestActionsNeedConfirmation(t *testing.T) {
	h := newHarness(t, Options{Interval: -1})
	h.refresh()
	h.key("p")
	if !strings.Contains(h.screen(), "CONFIRM: pause sale black-friday?") {
		t.Fatalf("no confirmation shown:\n%s", h.screen())
	}
	h.key("n")
	if len(h.f.actions) != 0 || h.m.pending != nil {
		t.Fatalf("cancelled action ran: %v", h.f.actions)
	}
	h.key("p")
	msgs := h.key("y")
	if len(msgs) != 1 || len(h.f.actions) != 1 || h.f.actions[0] != "pause" {
		t.Fatalf("confirmed pause: msgs %v actions %v", msgs, h.f.actions)
	}
	h.send(msgs[0])
	if !strings.Contains(h.screen(), "pause sale black-friday: done") {
		t.Fatalf("result not in the event log:\n%s", h.screen())
	}
	if !h.m.forceSlow {
		t.Fatal("the operator state is not re-read after an action")
	}
}

func TestAdmissionSwitchAndRateActions(t *testing.T) {
	h := newHarness(t, Options{Interval: -1})
	h.refresh()
	for _, step := range []struct{ keys, want string }{
		{"ay", "room pause"},
		{"2y", "off payment"},
		{"r\x7f\x7f", ""}, // the field starts with the current rate
	} {
		for _, msg := range h.key(step.keys) {
			h.send(msg)
		}
		if step.want != "" && h.f.actions[len(h.f.actions)-1] != step.want {
			t.Fatalf("%q: actions %v", step.keys, h.f.actions)
		}
	}
	h.m.input.SetValue("")
	for _, msg := range h.key("40\ry") {
		h.send(msg)
	}
	if got := h.f.actions[len(h.f.actions)-1]; got != "rate 40" {
		t.Fatalf("rate action %q (all %v)", got, h.f.actions)
	}
	for _, msg := range h.key("4y") {
		h.send(msg)
	}
	if !strings.Contains(h.screen(), "throw kill switch sweeper (turn sweeper OFF) failed: switch store unavailable") {
		t.Fatalf("failed action not logged:\n%s", h.screen())
	}
	h.key("r")
	h.m.input.SetValue("fast")
	h.key("\r")
	if h.m.pending != nil || !strings.Contains(h.screen(), "want a positive number") {
		t.Fatalf("bad rate accepted:\n%s", h.screen())
	}
}

func TestActionRefusedWhileOperatorStateUnknown(t *testing.T) {
	h := newHarness(t, Options{Interval: -1})
	h.f.setDown("control", errors.New("401 UNAUTHORIZED"))
	h.refresh()
	h.key("p")
	if h.m.pending != nil || !strings.Contains(h.screen(), "operator state unknown") {
		t.Fatalf("toggled an unknown state:\n%s", h.screen())
	}
}

func TestRenderFitsEveryTerminalSize(t *testing.T) {
	h := newHarness(t, Options{Interval: -1})
	h.refresh()
	for _, sz := range [][2]int{{120, 40}, {80, 24}, {200, 60}, {60, 15}} {
		h.send(tea.WindowSizeMsg{Width: sz[0], Height: sz[1]})
		lines := strings.Split(h.m.Render(), "\n")
		if len(lines) != sz[1] {
			t.Errorf("%dx%d: %d lines", sz[0], sz[1], len(lines))
		}
		for i, l := range lines {
			if w := ansi.StringWidth(l); w != sz[0] {
				t.Errorf("%dx%d: line %d is %d wide: %q", sz[0], sz[1], i, w, ansi.Strip(l))
				break
			}
		}
	}
}

func TestHelpTogglesAndQuit(t *testing.T) {
	h := newHarness(t, Options{Interval: -1})
	h.key("?")
	if !strings.Contains(h.screen(), "switch sweeper") {
		t.Fatalf("full help missing:\n%s", h.screen())
	}
	_, cmd := h.m.Update(tea.KeyPressMsg{Code: 'q', Text: "q"})
	if _, ok := cmd().(tea.QuitMsg); !ok {
		t.Fatal("q does not quit")
	}
}

func TestRecordEverySnapshot(t *testing.T) {
	var got []Snapshot
	h := newHarness(t, Options{Interval: -1, Record: func(s Snapshot) error {
		got = append(got, s)
		if len(got) == 2 {
			return errors.New("disk full")
		}
		return nil
	}})
	h.clk.Add(time.Second)
	for range 2 {
		for _, msg := range h.send(SnapshotMsg{Snapshot: Collect(context.Background(), h.m.opt.Sources, CollectOptions{Now: h.clk.Now})}) {
			h.send(msg)
		}
	}
	if len(got) != 2 || !strings.Contains(h.screen(), "record: disk full") {
		t.Fatalf("%d records; screen:\n%s", len(got), h.screen())
	}
}

func TestManyItemsSayHowManyAreHidden(t *testing.T) {
	h := newHarness(t, Options{Interval: -1})
	for i := range 30 {
		h.f.items = append(h.f.items, ItemStock{ID: fmt.Sprintf("sku-%02d", i), Quantity: 10, Remaining: 10})
	}
	h.refresh()
	if scr := h.screen(); !strings.Contains(scr, "… and 22 more items") {
		t.Fatalf("hidden items not counted:\n%s", scr)
	}
}
