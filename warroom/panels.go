package warroom

import (
	"fmt"
	"image/color"
	"strings"
)

// panelMetrics maps each alert metric to the panel whose border it colours.
var panelMetrics = map[string]string{
	"latency_p50_ms": "traffic", "latency_p99_ms": "traffic", "errors_per_sec": "traffic",
	"rate_limited_per_sec": "traffic", "not_admitted_per_sec": "traffic",
	"queue_depth": "admission", "wait_seconds": "admission",
	"consumer_lag": "pipeline", "dead_letters": "pipeline", "drift_units": "pipeline", "in_flight": "pipeline",
	"breaker": "payment", "payment_decline_ratio": "payment", "payment_error_ratio": "payment",
	"seconds_to_sold_out": "items", "sources_down": "alerts",
}

// borderFor colours a panel by its worst firing alert, or red when its source is down.
func borderFor(panel string, s *Snapshot, st ...Status) color.Color {
	for _, x := range st {
		if x.State == Down {
			return colCrit
		}
	}
	c := colBorder
	for _, a := range s.Alerts {
		if panelMetrics[a.Metric] != panel {
			continue
		}
		if a.Level == Crit {
			return colCrit
		}
		c = colWarn
	}
	return c
}

// itemsPanel is the per-item stock view; it keeps each item's velocity history for the sparkline.
type itemsPanel struct {
	history map[string][]float64
	size    int
}

func newItemsPanel(size int) itemsPanel {
	return itemsPanel{history: map[string][]float64{}, size: size}
}

// observe appends each item's velocity when the items reading is new.
func (p *itemsPanel) observe(s *Snapshot, fresh bool) {
	if !fresh {
		return
	}
	for _, x := range s.Derived.Items {
		h := p.history[x.ID]
		h = append(h, x.UnitsPerSec)
		if len(h) > p.size {
			h = h[len(h)-p.size:]
		}
		p.history[x.ID] = h
	}
}

func (p itemsPanel) view(s *Snapshot, width, height int) string {
	if !s.Items.OK() {
		return stateLine(s.Items.Status)
	}
	d := map[string]ItemDerived{}
	for _, x := range s.Derived.Items {
		d[x.ID] = x
	}
	const nameW, numsW, rateW, soldOutW = 12, 40, 22, 16
	barW := max(width-nameW-numsW-rateW-soldOutW-3, 10)
	sparkW := max(rateW-12, 4)
	var lines []string
	for i, it := range s.Items.Data {
		if i == height-1 && len(s.Items.Data) > height {
			lines = append(lines, fg(colDim).Render(fmt.Sprintf("… and %d more items (a taller terminal shows them)", len(s.Items.Data)-i)))
			break
		}
		x := d[it.ID]
		paid := max(x.Paid, 0)
		if !x.Consistent {
			paid = 0
		}
		held := it.Held
		if x.LiveOnly && held == 0 { // a target without holds: its unpaid live orders hold the units
			held = x.Unpaid
		}
		nums := fmt.Sprintf("%s %d  %s %d  %s %s  / %d", fg(colLeft).Render("left"), it.Remaining,
			fg(colHeld).Render("held"), held, fg(colPaid).Render("paid"), known(x.Consistent && x.Paid >= 0, x.Paid), it.Quantity)
		rate := fmt.Sprintf("%s %6s/s", sparkline(p.history[it.ID], sparkW), num(x.UnitsPerSec))
		// Numbers first and the bar last, so a narrow terminal loses bar cells, never the numbers.
		lines = append(lines, pad(it.ID, nameW)+pad(nums, numsW)+" "+pad(rate, rateW)+" "+pad(soldOut(it, x), soldOutW)+" "+
			stockBar(it.Quantity, paid, held, it.Remaining, barW))
	}
	return strings.Join(lines, "\n")
}

func soldOut(it ItemStock, x ItemDerived) string {
	if it.Remaining <= 0 {
		return fg(colCrit).Render("SOLD OUT")
	}
	return "out in " + eta(x.SecondsToSoldOut)
}

func trafficView(s *Snapshot) string {
	if !s.Traffic.OK() {
		return stateLine(s.Traffic.Status)
	}
	r := s.Derived.OutcomesPerSec
	rate := func(key string) string {
		if r == nil {
			return "-"
		}
		return num(r[key])
	}
	row := func(name, key string) string {
		return fmt.Sprintf("%-18s %9s/s  %8s", name, rate(key), num(s.Traffic.Data.Outcomes[codeOf(key)]))
	}
	lines := []string{
		fg(colDim).Render(fmt.Sprintf("%-18s %11s  %8s", "outcome", "rate", "total")),
		fg(colOK).Render(row("reserved", "reserved")),
		row("sold out", "sold_out"),
		row("already purchased", "already_purchased"),
		row("not admitted", "not_admitted"),
		row("rate limited", "rate_limited"),
		fmt.Sprintf("%-18s %9s/s", "errors", rate("errors")),
		fmt.Sprintf("%-18s %9s/s", "other", rate("other")),
		latencyLine(s.Derived),
		fg(colDim).Render(fmt.Sprintf("servers %d/%d", s.Traffic.Data.Servers, s.Traffic.Data.ServersTotal)),
	}
	if r["errors"] > 0 {
		lines[6] = fg(colCrit).Render(lines[6])
	}
	return strings.Join(lines, "\n")
}

func codeOf(group string) string {
	for _, g := range outcomeGroups {
		if g.Name == group {
			return g.Code
		}
	}
	return ""
}

func admissionView(s *Snapshot) string {
	if !s.Admission.OK() {
		return stateLine(s.Admission.Status)
	}
	a := s.Admission.Data
	lines := []string{
		fmt.Sprintf("queue depth   %s", num(a.QueueDepth)),
		fmt.Sprintf("admit rate    %s/s (set %s/s)", num(s.Derived.AdmittedPerSec), num(a.Rate)),
		fmt.Sprintf("active buyers %s", num(a.Active)),
		fmt.Sprintf("wait estimate %s", eta(a.WaitSeconds)),
	}
	if c := s.Control.Data; s.Control.OK() && c.Room == nil {
		lines = append(lines, fg(colDim).Render("sale has no waiting room"))
	} else if s.Control.OK() && c.Room.Paused {
		lines = append(lines, fg(colWarn).Bold(true).Render("ADMISSION PAUSED"))
	}
	return strings.Join(lines, "\n")
}

func paymentView(s *Snapshot) string {
	if !s.Payment.OK() {
		return stateLine(s.Payment.Status)
	}
	b := s.Payment.Data.Breaker
	bc := colOK
	switch b {
	case "half-open":
		bc = colWarn
	case "open":
		bc = colCrit
	}
	return strings.Join([]string{
		"breaker  " + fg(bc).Bold(true).Render(b),
		fmt.Sprintf("declines %s%%", num(round2(100*s.Derived.PaymentDeclineRatio))),
		fmt.Sprintf("errors   %s%%", num(round2(100*s.Derived.PaymentErrorRatio))),
		fg(colDim).Render(fmt.Sprintf("paid %s", num(s.Payment.Data.Outcomes["PAID"]))),
	}, "\n")
}

func round2(v float64) float64 { return float64(int64(v*100+0.5)) / 100 }

func pipelineView(s *Snapshot) string {
	var lines []string
	if s.Pipeline.OK() {
		pl := s.Pipeline.Data
		lines = append(lines, fmt.Sprintf("consumer lag  %d", pl.Lag))
		var parts []string
		for _, x := range pl.Partitions {
			parts = append(parts, fmt.Sprintf("p%d:%d", x.Partition, x.Lag))
		}
		lines = append(lines, "  "+strings.Join(parts, " "))
		dl := fmt.Sprintf("dead letters  %d", pl.DeadLetters)
		if pl.DeadLetters > 0 {
			dl = fg(colCrit).Render(dl)
		}
		lines = append(lines, dl)
	} else {
		lines = append(lines, "kafka "+stateLine(s.Pipeline.Status), "", "")
	}
	if o := s.Derived.OrdersByStatus; s.Orders.OK() && liveOnly(s) {
		paid := "?"
		if n, ok := o["PAID"]; ok {
			paid = num(float64(n))
		}
		lines = append(lines, "orders in postgres", fmt.Sprintf("  live %d  paid %s", o["LIVE"], paid),
			fg(colDim).Render("  (the profile's queries)"))
	} else if s.Orders.OK() {
		o := s.Derived.OrdersByStatus
		lines = append(lines, "orders in postgres",
			fmt.Sprintf("  pending %d  paid %d", o["PENDING"], o["PAID"]),
			fmt.Sprintf("  expired %d  cancelled %d  failed %d", o["EXPIRED"], o["CANCELLED"], o["FAILED"]))
	} else {
		lines = append(lines, "postgres "+stateLine(s.Orders.Status), "", "")
	}
	if s.Orders.OK() && s.Items.OK() {
		drift := fmt.Sprintf("drift %d  in flight %d", s.Derived.MaxDrift, s.Derived.InFlight)
		if liveOnly(s) {
			drift = fmt.Sprintf("drift %d  in flight ?", s.Derived.MaxDrift)
		}
		if s.Derived.MaxDrift != 0 {
			drift = fg(colCrit).Bold(true).Render(drift)
		} else {
			drift = fg(colOK).Render(drift)
		}
		lines = append(lines, drift, fg(colDim).Render("  redis vs postgres"))
	} else {
		lines = append(lines, fg(colDim).Render("drift unknown (needs redis and postgres)"))
	}
	return strings.Join(lines, "\n")
}

func latencyLine(d Derived) string {
	if d.LatencyCount == 0 {
		return "latency p50 -  p99 -  (no purchases)"
	}
	return fmt.Sprintf("latency p50 %sms  p99 %sms  n=%s", num(d.LatencyP50MS), num(d.LatencyP99MS), num(d.LatencyCount))
}

// liveOnly reports whether the orders are counted only live and paid (not by status).
func liveOnly(s *Snapshot) bool {
	return s.Orders.OK() && len(s.Orders.Data) > 0 && s.Orders.Data[0].LiveOnly
}
