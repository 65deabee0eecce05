package warroom

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
)

// WriteTable prints a snapshot as plain tables: what --once and a non-terminal stdout show.
func WriteTable(w io.Writer, s *Snapshot) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	p := func(format string, a ...any) { fmt.Fprintf(tw, format+"\n", a...) }
	head := "SALE %s\tat %s\twindow %ss"
	args := []any{s.Sale, s.At.UTC().Format("2006-01-02T15:04:05Z"), num(s.Derived.WindowSeconds)}
	if s.Profile != "" {
		head, args = "SALE %s\tprofile %s\tat %s\twindow %ss", append([]any{s.Sale, s.Profile}, args[1:]...)
	}
	p(head, args...)
	p("")
	p("SOURCE\tSTATE\tTOOK\tERROR")
	for _, r := range s.Readings() {
		detail := r.Error
		if r.State == NotAvailable && r.Reason != "" {
			detail = "not available: " + r.Reason
		}
		p("%s\t%s\t%sms\t%s", r.Name, r.State, num(r.TookMS), detail)
	}
	p("")
	p("ITEM\tQUANTITY\tREMAINING\tHELD\tBUYERS\tPAID\tUNITS/S\tSOLD OUT IN\tDRIFT\tIN FLIGHT")
	d := map[string]ItemDerived{}
	for _, x := range s.Derived.Items {
		d[x.ID] = x
	}
	for _, it := range s.Items.Data {
		x := d[it.ID]
		p("%s\t%d\t%d\t%d\t%d\t%s\t%s\t%s\t%s\t%s", it.ID, it.Quantity, it.Remaining, it.Held, it.Buyers, known(x.Consistent && x.Paid >= 0, x.Paid),
			num(x.UnitsPerSec), eta(x.SecondsToSoldOut), known(x.Consistent, x.Drift), known(x.Consistent && !x.LiveOnly, x.InFlight))
	}
	p("")
	tw.Flush()
	line := func(label string, parts ...string) { fmt.Fprintf(w, "%-10s %s\n", label, strings.Join(parts, "  ")) }
	if t := s.Derived.OutcomesPerSec; s.Traffic.OK() && t != nil {
		line("TRAFFIC/S", "reserved "+num(t["reserved"]), "sold out "+num(t["sold_out"]), "already "+num(t["already_purchased"]),
			"not admitted "+num(t["not_admitted"]), "rate limited "+num(t["rate_limited"]), "errors "+num(t["errors"]), "other "+num(t["other"]))
	}
	if s.Traffic.OK() {
		line("TOTALS", counts(s.Traffic.Data.Outcomes))
		line("LATENCY", strings.TrimPrefix(latencyLine(s.Derived), "latency "), fmt.Sprintf("servers %d/%d", s.Traffic.Data.Servers, s.Traffic.Data.ServersTotal))
	}
	if s.Admission.OK() {
		a := s.Admission.Data
		line("ADMISSION", "queue "+num(a.QueueDepth), "active "+num(a.Active), "rate "+num(a.Rate)+"/s",
			"admitted "+num(s.Derived.AdmittedPerSec)+"/s", "wait "+num(a.WaitSeconds)+"s")
	}
	if s.Payment.OK() {
		line("PAYMENT", "breaker "+s.Payment.Data.Breaker, "declines "+num(round2(100*s.Derived.PaymentDeclineRatio))+"%",
			"errors "+num(round2(100*s.Derived.PaymentErrorRatio))+"%", counts(s.Payment.Data.Outcomes))
	}
	if s.Pipeline.OK() {
		pl := s.Pipeline.Data
		var parts []string
		for _, x := range pl.Partitions {
			parts = append(parts, fmt.Sprintf("p%d=%d", x.Partition, x.Lag))
		}
		line("PIPELINE", fmt.Sprintf("lag %d", pl.Lag), strings.Join(parts, " "), fmt.Sprintf("dead letters %d", pl.DeadLetters))
	}
	if s.Orders.OK() {
		line("ORDERS", intCounts(s.Derived.OrdersByStatus))
	}
	if s.Control.OK() {
		c := s.Control.Data
		room := "none"
		if c.Room != nil {
			room = fmt.Sprintf("paused=%t rate=%s/s maxActive=%d", c.Room.Paused, num(c.Room.Rate), c.Room.MaxActive)
		}
		line("CONTROL", fmt.Sprintf("sale paused=%t", c.Paused), "room "+room, "switches off: "+offSwitches(c.Switches))
	}
	fmt.Fprintln(w)
	if len(s.Alerts) == 0 {
		line("ALERTS", "none")
	}
	for _, a := range s.Alerts {
		line("ALERT", a.String())
	}
	return nil
}

// num formats a number compactly: integers without decimals, others with up to two.
func num(v float64) string {
	if v == float64(int64(v)) {
		return strconv.FormatInt(int64(v), 10)
	}
	return strconv.FormatFloat(v, 'f', 2, 64)
}

func known(ok bool, v int64) string {
	if !ok {
		return "?"
	}
	return strconv.FormatInt(v, 10)
}

// eta formats seconds to sold out; "-" when stock is not falling.
func eta(sec float64) string {
	switch {
	case sec < 0:
		return "-"
	case sec < 60:
		return fmt.Sprintf("%.0fs", sec)
	case sec < 3600:
		return fmt.Sprintf("%dm%02ds", int(sec)/60, int(sec)%60)
	}
	return fmt.Sprintf("%dh%02dm", int(sec)/3600, int(sec)%3600/60)
}

func counts(m map[string]float64) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, k+"="+num(m[k]))
	}
	if len(parts) == 0 {
		return "-"
	}
	return strings.Join(parts, " ")
}

// intCounts prints the order counts present: every status for the bundled server, LIVE and PAID
// (when the profile counts them) for any other target.
func intCounts(m map[string]int64) string {
	var parts []string
	for _, k := range []string{"LIVE", "PENDING", "PAID", "EXPIRED", "CANCELLED", "FAILED"} {
		if n, ok := m[k]; ok {
			parts = append(parts, k+"="+strconv.FormatInt(n, 10))
		}
	}
	return strings.Join(parts, " ")
}

func offSwitches(m map[string]bool) string {
	var off []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		if m[k] {
			off = append(off, k)
		}
	}
	if len(off) == 0 {
		return "none"
	}
	return strings.Join(off, ",")
}
