package warroom

import (
	"context"
	"errors"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"
	"github.com/charmbracelet/x/exp/golden"
	"github.com/charmbracelet/x/exp/teatest/v2"
)

// The golden screens run the real bubbletea program (teatest) at a fixed 120x40 terminal with the
// clock off, feed it snapshots of a fake target, and compare the final screen, stripped of colour,
// with testdata/<test>.golden. Regenerate with: go test ./warroom/ -run Golden -update

func goldenScreen(t *testing.T, f *fakeSources, msgs func(collect func() tea.Msg) []tea.Msg) {
	t.Helper()
	clk := newClock()
	m := New(Options{Sources: f.sources(), Alerts: DefaultAlerts(), Now: clk.Now, Interval: -1})
	tm := teatest.NewTestModel(t, m, teatest.WithInitialTermSize(120, 40))
	collect := func() tea.Msg {
		clk.Add(time.Second)
		return SnapshotMsg{Snapshot: Collect(context.Background(), f.sources(), CollectOptions{Now: clk.Now})}
	}
	for _, msg := range msgs(collect) {
		tm.Send(msg)
	}
	if err := tm.Quit(); err != nil {
		t.Fatal(err)
	}
	final := tm.FinalModel(t, teatest.WithFinalTimeout(10*time.Second)).(Model)
	golden.RequireEqual(t, ansi.Strip(final.Render()))
}

func TestGoldenDashboard(t *testing.T) {
	f := newFake()
	goldenScreen(t, f, func(collect func() tea.Msg) []tea.Msg {
		first := collect()
		f.items[0].Remaining, f.items[0].Held = 28, 32
		f.orders[0].Pending = 30
		f.traffic.Outcomes["RESERVED"] += 12
		f.traffic.Outcomes["SOLD_OUT"] += 240
		f.traffic.Latency = Histogram{Bounds: f.traffic.Latency.Bounds, Counts: []float64{150, 500, 640, 670, 673}, Count: 673, Sum: 3}
		f.admission.AdmittedTotal += 25
		f.payment.Outcomes["PAID"] += 8
		f.payment.Outcomes["PAYMENT_DECLINED"] += 2
		f.pipeline.Partitions[0].End += 1200
		f.pipeline.Partitions[0].Lag += 1200
		f.pipeline.Lag += 1200
		return []tea.Msg{first, collect()}
	})
}

func TestGoldenSourcesDownAndAbsent(t *testing.T) {
	f := newFake()
	f.setDown("orders", errors.New("postgres 127.0.0.1:15432/fsctl unreachable (is the stack up? try `fsctl stack up`)"))
	f.setDown("pipeline", errors.New("kafka metadata of fsctl.orders: dial tcp 127.0.0.1:19092: connect: connection refused"))
	goldenScreen(t, f, func(collect func() tea.Msg) []tea.Msg {
		var msgs []tea.Msg
		for range DownAfter { // a source is down once it missed DownAfter probes in a row
			msgs = append(msgs, collect())
		}
		return msgs
	})
}

func TestGoldenConfirmation(t *testing.T) {
	f := newFake()
	f.control.Paused = true
	f.control.Switches["payment"] = true
	goldenScreen(t, f, func(collect func() tea.Msg) []tea.Msg {
		return []tea.Msg{collect(), tea.KeyPressMsg{Code: 'p', Text: "p"}}
	})
}
