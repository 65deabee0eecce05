package warroom

import (
	"math"
	"sort"

	"github.com/fsctl/fsctl/internal/proof/verify"
)

// Outcome groups of the traffic panel; every other purchase answer counts as "other".
var outcomeGroups = []struct{ Name, Code string }{
	{"reserved", "RESERVED"}, {"sold_out", "SOLD_OUT"}, {"already_purchased", "ALREADY_PURCHASED"},
	{"not_admitted", "NOT_ADMITTED"}, {"rate_limited", "RATE_LIMITED"},
}

// errorCodes are the purchase answers that mean the checkout failed the buyer, not refused them.
var errorCodes = map[string]bool{"UNAVAILABLE": true, "ORDER_PIPELINE_UNAVAILABLE": true, "INTERNAL": true}

// Derived is what the dashboard computes from two snapshots (rates over the window between them)
// or from two sources of one snapshot (drift). A rate is zero until there are two readings.
type Derived struct {
	// WindowSeconds is the time between the traffic readings the rates come from; 0 when the rates
	// are cumulative (a first snapshot).
	WindowSeconds float64 `json:"windowSeconds"`
	// OutcomesPerSec is purchase answers per second by group (reserved, sold_out, already_purchased,
	// not_admitted, rate_limited, errors, other); absent until there are two traffic readings.
	OutcomesPerSec map[string]float64 `json:"outcomesPerSec,omitempty"`
	// LatencyP50MS and LatencyP99MS are the purchase route's latency over the window (over the
	// servers' lifetime for a first snapshot), from histogram buckets: an upper bound.
	LatencyP50MS float64 `json:"latencyP50Ms"`
	LatencyP99MS float64 `json:"latencyP99Ms"`
	// LatencyCount is how many purchases the latency is over; 0 means none in the window, and the
	// quantiles are 0 (an idle window has no latency, so no latency alert).
	LatencyCount float64 `json:"latencyCount"`
	// AdmittedPerSec is the observed admission rate.
	AdmittedPerSec float64 `json:"admittedPerSec"`
	// PaymentDeclineRatio and PaymentErrorRatio are shares of pay answers over the window.
	PaymentDeclineRatio float64 `json:"paymentDeclineRatio"`
	PaymentErrorRatio   float64 `json:"paymentErrorRatio"`
	// Items is per-item velocity and drift, in the order of the items reading.
	Items []ItemDerived `json:"items,omitempty"`
	// OrdersByStatus totals PostgreSQL's orders over the items.
	OrdersByStatus map[string]int64 `json:"ordersByStatus,omitempty"`
	// MaxDrift is the largest |Drift| over the items; InFlight sums the holds not yet in PostgreSQL.
	MaxDrift int64 `json:"maxDrift"`
	InFlight int64 `json:"inFlight"`
}

// ItemDerived is one item's sell-through and drift.
type ItemDerived struct {
	ID string `json:"id"`
	// Paid comes from PostgreSQL (-1 when it is not known).
	Paid int64 `json:"paid"`
	// UnitsPerSec is how fast Remaining falls (sell-through velocity).
	UnitsPerSec float64 `json:"unitsPerSec"`
	// SecondsToSoldOut at the current velocity; -1 when it is not falling (or already 0).
	SecondsToSoldOut float64 `json:"secondsToSoldOut"`
	// Drift is redis stock + holds - (quantity - paid), the units equation's imbalance as verify
	// counts it with its sign turned: units lost (<0) or doubled (>0). InFlight is
	// redis holds - PostgreSQL pending: reservations still on their way through Kafka.
	Drift    int64 `json:"drift"`
	InFlight int64 `json:"inFlight"`
	// Consistent is false when PostgreSQL or Redis was not read, so drift is unknown.
	Consistent bool `json:"known"`
	// LiveOnly marks an item whose orders are counted only live and paid (ItemOrders.LiveOnly):
	// Drift is then redis stock + live orders - quantity (the units Redis gave out that PostgreSQL
	// has no live order for, negative), InFlight is unknown (no pending count), and Unpaid is the
	// live orders not known to be paid, which the items bar shows as held when the target keeps no
	// holds.
	LiveOnly bool  `json:"profiled,omitempty"`
	Unpaid   int64 `json:"unpaid,omitempty"`
}

// Derive computes cur's derived values against prev (nil for a first snapshot). prev's derived
// values carry over where a slow source was not read again since prev.
func Derive(prev *Snapshot, cur *Snapshot) {
	d := Derived{}
	if prev != nil {
		d = prev.Derived
	}
	if cur.Traffic.OK() {
		var pt *Traffic
		if prev != nil && prev.Traffic.OK() {
			pt = &prev.Traffic.Data
		}
		dt := 0.0
		if pt != nil {
			dt = cur.Traffic.At.Sub(prev.Traffic.At).Seconds()
		}
		if pt == nil || dt > 0 {
			d.WindowSeconds = dt
			deriveTraffic(&d, pt, cur.Traffic.Data, dt)
		}
	}
	if cur.Admission.OK() && prev != nil && prev.Admission.OK() {
		if dt := cur.Admission.At.Sub(prev.Admission.At).Seconds(); dt > 0 {
			d.AdmittedPerSec = math.Max(0, (cur.Admission.Data.AdmittedTotal-prev.Admission.Data.AdmittedTotal)/dt)
		}
	}
	if cur.Payment.OK() {
		var po map[string]float64
		if prev != nil && prev.Payment.OK() && cur.Payment.At.After(prev.Payment.At) {
			po = prev.Payment.Data.Outcomes
		}
		delta := diff(cur.Payment.Data.Outcomes, po)
		total := sum(delta)
		if total > 0 {
			d.PaymentDeclineRatio = delta["PAYMENT_DECLINED"] / total
			d.PaymentErrorRatio = (delta["PAYMENT_UNAVAILABLE"] + delta["UNAVAILABLE"] + delta["INTERNAL"]) / total
		} else if po != nil {
			d.PaymentDeclineRatio, d.PaymentErrorRatio = 0, 0
		}
	}
	deriveItems(&d, prev, cur)
	cur.Derived = d
}

func deriveTraffic(d *Derived, prev *Traffic, cur Traffic, dt float64) {
	var po map[string]float64
	var ph *Histogram
	if prev != nil {
		po, ph = prev.Outcomes, &prev.Latency
	}
	d.OutcomesPerSec = nil
	if prev != nil {
		deriveOutcomes(d, diff(cur.Outcomes, po), dt)
	}
	h := cur.Latency
	if ph != nil && len(ph.Counts) == len(h.Counts) {
		h = subtractHistogram(h, *ph)
	}
	d.LatencyP50MS, d.LatencyP99MS, d.LatencyCount = 1000*quantile(h, 0.5), 1000*quantile(h, 0.99), h.Count
}

// deriveOutcomes groups the answers of one window into per-second rates.
func deriveOutcomes(d *Derived, delta map[string]float64, per float64) {
	d.OutcomesPerSec = map[string]float64{}
	known := map[string]bool{}
	for _, g := range outcomeGroups {
		d.OutcomesPerSec[g.Name] = delta[g.Code] / per
		known[g.Code] = true
	}
	var errs, other float64
	for code, n := range delta {
		switch {
		case known[code]:
		case errorCodes[code]:
			errs += n
		default:
			other += n
		}
	}
	d.OutcomesPerSec["errors"], d.OutcomesPerSec["other"] = errs/per, other/per
}

func deriveItems(d *Derived, prev, cur *Snapshot) {
	if !cur.Items.OK() {
		return
	}
	paid := map[string]ItemOrders{}
	if cur.Orders.OK() {
		d.OrdersByStatus = map[string]int64{}
		for _, o := range cur.Orders.Data {
			paid[o.ID] = o
			if o.LiveOnly { // the profile's queries count live and paid orders, not every status
				d.OrdersByStatus["LIVE"] += o.Live
				if o.Paid >= 0 {
					d.OrdersByStatus["PAID"] += o.Paid
				}
				continue
			}
			d.OrdersByStatus["PENDING"] += o.Pending
			d.OrdersByStatus["PAID"] += o.Paid
			d.OrdersByStatus["EXPIRED"] += o.Expired
			d.OrdersByStatus["CANCELLED"] += o.Cancelled
			d.OrdersByStatus["FAILED"] += o.Failed
		}
	}
	before := map[string]ItemDerived{}
	prevStock := map[string]int64{}
	dt := 0.0
	if prev != nil && prev.Items.OK() {
		dt = cur.Items.At.Sub(prev.Items.At).Seconds()
		for _, it := range prev.Items.Data {
			prevStock[it.ID] = it.Remaining
		}
		for _, it := range prev.Derived.Items {
			before[it.ID] = it
		}
	}
	d.Items, d.MaxDrift, d.InFlight = nil, 0, 0
	for _, it := range cur.Items.Data {
		x := ItemDerived{ID: it.ID, Paid: -1, SecondsToSoldOut: -1}
		if b, ok := before[it.ID]; ok {
			x.UnitsPerSec = b.UnitsPerSec
		}
		if p, ok := prevStock[it.ID]; ok && dt > 0 {
			x.UnitsPerSec = math.Max(0, float64(p-it.Remaining)/dt)
		}
		if x.UnitsPerSec > 0 && it.Remaining > 0 {
			x.SecondsToSoldOut = float64(it.Remaining) / x.UnitsPerSec
		}
		if o, ok := paid[it.ID]; ok && o.LiveOnly {
			x.Paid, x.Consistent, x.LiveOnly = o.Paid, true, true
			x.Drift = -verify.Delta(verify.Item{Quantity: it.Quantity, Stock: it.Remaining, Live: o.Live})
			x.Unpaid = o.Live - max(o.Paid, 0)
			d.MaxDrift = max(d.MaxDrift, abs(x.Drift))
		} else if ok {
			x.Paid, x.Consistent = o.Paid, true
			x.Drift = -verify.Delta(verify.Item{Quantity: it.Quantity, Stock: it.Remaining, Holds: verify.Of(it.Held), Paid: verify.Of(o.Paid)})
			x.InFlight = it.Held - o.Pending
			d.MaxDrift = max(d.MaxDrift, abs(x.Drift))
			d.InFlight += x.InFlight
		}
		d.Items = append(d.Items, x)
	}
}

func diff(cur, prev map[string]float64) map[string]float64 {
	out := make(map[string]float64, len(cur))
	for k, v := range cur {
		out[k] = math.Max(0, v-prev[k]) // a restarted server resets its counters
	}
	return out
}

func sum(m map[string]float64) float64 {
	t := 0.0
	for _, v := range m {
		t += v
	}
	return t
}

func abs(v int64) int64 {
	if v < 0 {
		return -v
	}
	return v
}

func subtractHistogram(a, b Histogram) Histogram {
	out := Histogram{Bounds: a.Bounds, Counts: make([]float64, len(a.Counts)), Count: a.Count - b.Count, Sum: a.Sum - b.Sum}
	for i := range a.Counts {
		out.Counts[i] = a.Counts[i] - b.Counts[i]
	}
	return out
}

// quantile returns the upper bound of the bucket holding the q-quantile (the last finite bound when
// it lies in +Inf), 0 for an empty histogram.
func quantile(h Histogram, q float64) float64 {
	if h.Count <= 0 || len(h.Bounds) == 0 {
		return 0
	}
	rank := q * h.Count
	i := sort.Search(len(h.Counts), func(i int) bool { return h.Counts[i] >= rank })
	if i >= len(h.Bounds) {
		return h.Bounds[len(h.Bounds)-1]
	}
	return h.Bounds[i]
}
