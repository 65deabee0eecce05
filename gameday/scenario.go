// Package gameday runs a scripted flash-sale game day on the real services: it brings the stack up,
// creates the sale, runs preflight, starts checkout instances, fires buyers at them while faults
// are injected at chosen moments, lets expiry and the consumer settle, reconciles, and checks the
// invariants of docs/design.md. A scenario is a YAML file; the default one is embedded.
package gameday

import (
	_ "embed"
	"errors"
	"fmt"
	"time"
)

//go:embed default.yaml
var defaultScenario []byte

// Default returns the built-in scenario (the same file as examples/gameday.yaml).
func Default() Scenario {
	s, err := Parse(defaultScenario)
	if err != nil {
		panic("gameday: the embedded default scenario does not parse: " + err.Error())
	}
	return s
}

// DefaultYAML is the text of the built-in scenario.
func DefaultYAML() []byte { return append([]byte(nil), defaultScenario...) }

// Scenario is one game day: the sale, the buyers, the checkout fleet and the faults.
type Scenario struct {
	Name string
	// Seed makes the run repeatable: who pays, cancels or abandons, the payment provider's dice,
	// which server a kill picks and any jitter of the steps' moments.
	Seed uint64
	Sale SaleSpec
	// Servers is how many `fsctl serve` instances the run starts before the burst.
	Servers int
	// Buyers arrive at Rate per second (after Ramp), each buying one unit of the items in turn.
	Buyers int
	Rate   float64
	Ramp   time.Duration
	// Pay and Cancel are the shares of reserved buyers who pay or cancel; the rest abandon.
	Pay, Cancel float64
	// Retries resend a purchase with the same Idempotency-Key after a 5xx or a broken connection,
	// as a real client does when the server it talked to died.
	Retries int
	// RetryAfter, when set, makes the buyers honour the server's Retry-After, as an app does: a
	// retry waits what the answer asked (at most this long), and a 503 PAUSED or a 429 is retried
	// too. Zero (the default) retries at once, and only failures.
	RetryAfter time.Duration
	// Replays resend a purchase with the same Idempotency-Key after it was answered (a resubmitted
	// form), so one key is answered by several instances; each answer must agree with the first.
	Replays int
	// Arrivals, when set, is each buyer's arrival after the release in order, in place of Rate
	// and Ramp (a chaos game day's trickle and bursts).
	Arrivals []time.Duration
	// Chaos marks a schedule drawn from the seed (Chaos): a fault whose trigger never came (an
	// armed instance that was never asked for a reservation) is noted, not failed, and a failing
	// run says how to replay it.
	Chaos *ChaosConfig
	// Settle bounds the wait, after the burst and the steps, for every hold to end.
	Settle time.Duration
	// Budget, when set, is the availability the run must keep: the game day fails beyond it.
	Budget *Budget
	Steps  []Step
}

// Budget is a scenario's error budget; a negative field is not judged.
type Budget struct {
	// Undecided is the largest share of buyers whose last try got no definitive answer.
	Undecided float64
	// Outage is the longest stretch of arrivals (by when the tries were sent) in which no try got
	// a definitive answer.
	Outage time.Duration
}

// WithBudget is the scenario with the parts of over that are given in place of its budget's (a
// negative part is not given, as in a budget it is not judged): the budget flags of fsctl
// gameday. A scenario without a budget gets one that judges only the parts given.
func (s Scenario) WithBudget(over Budget) Scenario {
	if over.Undecided < 0 && over.Outage < 0 {
		return s
	}
	b := Budget{Undecided: -1, Outage: -1}
	if s.Budget != nil {
		b = *s.Budget
	}
	if over.Undecided < 0 {
		over.Undecided = b.Undecided
	}
	if over.Outage < 0 {
		over.Outage = b.Outage
	}
	s.Budget = &over
	return s
}

// SaleSpec is the sale a game day creates (reset first: game days are rehearsals).
type SaleSpec struct {
	ID           string
	HoldTTL      time.Duration
	PerUserLimit int
	Items        []ItemSpec
	// Room, when set, puts a waiting room in front of the sale; buyers then queue, poll and buy
	// with their admission token.
	Room *RoomSpec
}

// RoomSpec is the sale's waiting room.
type RoomSpec struct {
	AdmissionRate float64
	MaxActive     int
	PowDifficulty int
}

// ItemSpec is one item of the sale.
type ItemSpec struct {
	ID       string
	Quantity int64
	Shards   int
}

// Step is one fault injected At after the burst's release (plus up to Jitter, drawn from the seed).
type Step struct {
	At     time.Duration
	Jitter time.Duration
	Fault  Fault
	// Line is where the step starts in the scenario file, for messages (a chaos step's number).
	Line int
	// Kind, when set, is what the step is tallied as (a chaos step's kind in the nemesis).
	Kind string
}

// Duration is how long the arrivals of the scenario's buyers take.
func (s Scenario) Duration() time.Duration {
	if n := len(s.Arrivals); n > 0 {
		return s.Arrivals[n-1]
	}
	if s.Rate <= 0 {
		return 0
	}
	return s.Ramp/2 + time.Duration(float64(s.Buyers)/s.Rate*float64(time.Second))
}

// Units is the sum of the items' quantities.
func (s Scenario) Units() int64 {
	var n int64
	for _, it := range s.Sale.Items {
		n += it.Quantity
	}
	return n
}

func (s Scenario) String() string {
	arrive := fmt.Sprintf("at %g/s", s.Rate)
	if len(s.Arrivals) > 0 {
		arrive = fmt.Sprintf("over %s", s.Duration().Round(100*time.Millisecond))
	}
	return fmt.Sprintf("%s: %d buyers %s for %d units on %d server(s), %d fault step(s), seed %d",
		s.Name, s.Buyers, arrive, s.Units(), s.Servers, len(s.Steps), s.Seed)
}

// checker is a step that can tell before any load whether it will be able to run: its program on
// PATH, its URL and its variables set.
type checker interface{ Check() error }

// Check finds, before any buyer arrives, every step that could not run: a program that is not on
// PATH, a URL whose variables are not set. A typo must not cost a sale's worth of traffic. Each
// problem is named by its step's line.
func (s Scenario) Check() error {
	var errs []error
	for _, st := range s.Steps {
		if c, ok := st.Fault.(checker); ok {
			if err := c.Check(); err != nil {
				errs = append(errs, fmt.Errorf("step (line %d): %w", st.Line, err))
			}
		}
	}
	return errors.Join(errs...)
}
