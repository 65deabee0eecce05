// Package warroom is the live view of a sale window: it collects one Snapshot of a checkout from
// small per-panel data sources (Redis stock, PostgreSQL orders, Kafka lag, the servers' /metrics and
// admin API), derives rates and drift between snapshots, evaluates alert thresholds, records the
// timeline, and renders it all as a bubbletea dashboard or a one-shot table.
package warroom

import (
	"time"

	"github.com/fsctl/fsctl/internal/platform/kafkaconn"
)

// State says whether a panel's source answered.
type State string

// Source states. NotAvailable means the target has no such source (its profile declares none, or
// no endpoint was given); Down means the source exists but missed DownAfter probes in a row; Late
// means it missed fewer, and its reading is the last answer it gave (Merge).
const (
	OK           State = "ok"
	Late         State = "late"
	Down         State = "down"
	NotAvailable State = "n/a"
)

// DownAfter is how many probes in a row a source must miss (an error, or no answer within the
// probe timeout) before the live dashboard and the game day count it down: on a loaded box a
// source that answers in 1.1 s once is late, not down, and raises no sources_down alert.
const DownAfter = 3

// Status is how one reading went.
type Status struct {
	State State  `json:"state"`
	Error string `json:"error,omitempty"`
	// Reason says why a source is not available (the target's profile declares no such part, or
	// no endpoint was given), so an operator can tell a gap in the profile from a fault.
	Reason string    `json:"reason,omitempty"`
	At     time.Time `json:"at,omitzero"`
	// TookMS is how long the probe ran, in milliseconds.
	TookMS float64 `json:"tookMs,omitempty"`
	// Misses counts the probes in a row this source missed, this one included (Merge).
	Misses int `json:"misses,omitempty"`
	// Answered is when a late source's data was read (zero when it has not answered yet).
	Answered time.Time `json:"answered,omitzero"`
}

// Reading is one source's answer with its status; Data is the zero value unless State is OK.
type Reading[T any] struct {
	Status
	Data T `json:"data"`
}

// OK reports whether the reading holds data: this probe's answer, or a late source's last one.
func (r Reading[T]) OK() bool { return r.State == OK || r.State == Late && !r.Answered.IsZero() }

// ItemStock is one item as Redis holds it, summed over the item's shards.
type ItemStock struct {
	ID        string `json:"id"`
	Quantity  int64  `json:"quantity"`
	Remaining int64  `json:"remaining"`
	Held      int64  `json:"held"`
	// Buyers counts the members of the buyers keys (users, not units, when it is a set).
	Buyers int64 `json:"buyers"`
	Shards int   `json:"shards"`
}

// ItemOrders is one item's orders as the source of truth holds them.
type ItemOrders struct {
	ID       string `json:"id"`
	Quantity int64  `json:"quantity"`
	Sold     int64  `json:"sold"`
	// Pending, Expired, Cancelled and Failed count the orders by status (fsctl serve's database).
	Pending int64 `json:"pending"`
	// Paid is -1 when the profile has no paid query.
	Paid      int64 `json:"paid"`
	Expired   int64 `json:"expired"`
	Cancelled int64 `json:"cancelled"`
	Failed    int64 `json:"failed"`
	// Live counts the orders in a live status (pending or paid).
	Live int64 `json:"live"`
	// LiveOnly is true when only the profile's queries count the orders (every target but fsctl
	// serve): Quantity, Sold, Live and Paid are read, the counts by status are not. The JSON name
	// is the one records have always carried.
	LiveOnly bool `json:"profiled,omitempty"`
}

// Histogram is a cumulative Prometheus histogram: Counts[i] observations ≤ Bounds[i].
type Histogram struct {
	Bounds []float64 `json:"bounds,omitempty"`
	Counts []float64 `json:"counts,omitempty"`
	Count  float64   `json:"count"`
	Sum    float64   `json:"sum"`
}

// Traffic is the purchase endpoint's cumulative counters, summed over the servers scraped.
type Traffic struct {
	// Outcomes counts purchase answers by outcome code (RESERVED, SOLD_OUT, ...).
	Outcomes map[string]float64 `json:"outcomes"`
	// Latency is the purchase route's request latency in seconds.
	Latency Histogram `json:"latency"`
	// Servers is how many servers answered, of ServersTotal.
	Servers      int `json:"servers"`
	ServersTotal int `json:"serversTotal"`
}

// Admission is the waiting room of the sale.
type Admission struct {
	QueueDepth    float64 `json:"queueDepth"`
	Active        float64 `json:"active"`
	Rate          float64 `json:"rate"`
	WaitSeconds   float64 `json:"waitSeconds"`
	AdmittedTotal float64 `json:"admittedTotal"`
}

// Payment is the payment provider as the servers see it.
type Payment struct {
	// Breaker is the worst circuit breaker state over the servers: closed, half-open or open.
	Breaker string `json:"breaker"`
	// Outcomes counts pay answers by outcome code (PAID, PAYMENT_DECLINED, ...).
	Outcomes map[string]float64 `json:"outcomes"`
}

// PartitionLag is one partition of the orders topic.
type PartitionLag = kafkaconn.PartitionLag

// Pipeline is the Kafka side of the order pipeline.
type Pipeline struct {
	Topic      string         `json:"topic"`
	Group      string         `json:"group"`
	Partitions []PartitionLag `json:"partitions"`
	Lag        int64          `json:"lag"`
	// DeadLetters is the number of messages on the dead-letter topic.
	DeadLetters int64 `json:"deadLetters"`
}

// Control is the operator state of the sale.
type Control struct {
	Paused bool `json:"paused"`
	// Room is absent when the sale has no waiting room.
	Room     *Room           `json:"room,omitempty"`
	Switches map[string]bool `json:"switches"`
}

// Room is the waiting room's operator settings.
type Room struct {
	Paused    bool    `json:"paused"`
	Rate      float64 `json:"admissionRate"`
	MaxActive int     `json:"maxActive"`
}

// Snapshot is everything the dashboard shows at one instant; it is also one line of a record.
type Snapshot struct {
	Sale string `json:"sale"`
	// Profile names the target profile the sources read the checkout through.
	Profile   string                `json:"profile,omitempty"`
	At        time.Time             `json:"at"`
	Items     Reading[[]ItemStock]  `json:"items"`
	Orders    Reading[[]ItemOrders] `json:"orders"`
	Traffic   Reading[Traffic]      `json:"traffic"`
	Admission Reading[Admission]    `json:"admission"`
	Payment   Reading[Payment]      `json:"payment"`
	Pipeline  Reading[Pipeline]     `json:"pipeline"`
	Control   Reading[Control]      `json:"control"`
	// Derived holds what needs two snapshots (rates) or two sources (drift).
	Derived Derived `json:"derived"`
	Alerts  []Alert `json:"alerts,omitempty"`
}

// Readings lists the snapshot's sources by panel name, in display order.
func (s *Snapshot) Readings() []NamedStatus {
	return []NamedStatus{
		{"items", s.Items.Status}, {"orders", s.Orders.Status}, {"traffic", s.Traffic.Status},
		{"admission", s.Admission.Status}, {"payment", s.Payment.Status}, {"pipeline", s.Pipeline.Status},
		{"control", s.Control.Status},
	}
}

// NamedStatus is a source's status with its panel name.
type NamedStatus struct {
	Name string
	Status
}

// Merge completes s, the next collection of a timeline, with what prev (nil for the first) knew: a
// source this round did not read (State "") keeps prev's reading, so a snapshot taken on a fast
// tick still carries the slow sources' last answers; and a source that missed its probe is Down
// only once it missed DownAfter in a row, Late before that, showing its last answer.
func (s *Snapshot) Merge(prev *Snapshot) {
	if prev == nil {
		prev = &Snapshot{}
	}
	keep(&s.Items, prev.Items)
	keep(&s.Orders, prev.Orders)
	keep(&s.Traffic, prev.Traffic)
	keep(&s.Admission, prev.Admission)
	keep(&s.Payment, prev.Payment)
	keep(&s.Pipeline, prev.Pipeline)
	keep(&s.Control, prev.Control)
}

func keep[T any](cur *Reading[T], prev Reading[T]) {
	switch {
	case cur.State == "":
		*cur = prev
	case cur.State == Down:
		if prev.State == Late || prev.State == Down {
			cur.Misses = prev.Misses + 1
		} else {
			cur.Misses = 1
		}
		if cur.Misses >= DownAfter || prev.State == Down {
			return
		}
		cur.State = Late
		switch prev.State {
		case OK:
			cur.Data, cur.Answered = prev.Data, prev.At
		case Late:
			cur.Data, cur.Answered = prev.Data, prev.Answered
		}
	}
}
