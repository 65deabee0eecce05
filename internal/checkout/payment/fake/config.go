package fake

import (
	"errors"
	"fmt"
	"math"
	"time"
)

// Config sets how the fake provider behaves. Everything but Seed can be changed while it runs.
type Config struct {
	// Latency is how long each charge, lookup and void takes, give or take Jitter.
	Latency, Jitter time.Duration
	// DeclineRate is the share of new charges declined; ErrorRate the share of charge requests
	// answered 503 without charging. Both lie in 0..1.
	DeclineRate, ErrorRate float64
	// Outages are windows, measured from the provider's start, in which every charge, lookup and void
	// is answered 503.
	Outages []Window
	// Seed seeds the random source behind latency jitter, errors and declines.
	Seed int64
}

// Window is a span of time since the provider started: From inclusive, To exclusive.
type Window struct {
	From, To time.Duration
}

// Contains reports whether the offset since start falls inside w.
func (w Window) Contains(sinceStart time.Duration) bool {
	return sinceStart >= w.From && sinceStart < w.To
}

// Validate reports the first knob out of range.
func (c Config) Validate() error {
	if c.Latency < 0 || c.Jitter < 0 {
		return fmt.Errorf("latency %s and jitter %s must not be negative", c.Latency, c.Jitter)
	}
	if err := checkRate("decline rate", c.DeclineRate); err != nil {
		return err
	}
	if err := checkRate("error rate", c.ErrorRate); err != nil {
		return err
	}
	for _, w := range c.Outages {
		if w.From < 0 || w.To <= w.From {
			return fmt.Errorf("outage %s..%s: want 0 <= from < to", w.From, w.To)
		}
	}
	return nil
}

func checkRate(name string, r float64) error {
	if math.IsNaN(r) || r < 0 || r > 1 {
		return fmt.Errorf("%s %v: must lie in 0..1", name, r)
	}
	return nil
}

// behaviorDoc is the JSON form of the runtime knobs, durations in Go syntax ("250ms").
type behaviorDoc struct {
	Latency     string      `json:"latency"`
	Jitter      string      `json:"jitter"`
	DeclineRate float64     `json:"declineRate"`
	ErrorRate   float64     `json:"errorRate"`
	Outages     []windowDoc `json:"outages"`
	// Uptime is how long the provider has run, so a game day can place an outage "from now".
	// Ignored when sent.
	Uptime string `json:"uptime,omitempty"`
}

type windowDoc struct {
	From string `json:"from"`
	To   string `json:"to"`
}

func docOf(c Config) behaviorDoc {
	d := behaviorDoc{
		Latency: c.Latency.String(), Jitter: c.Jitter.String(),
		DeclineRate: c.DeclineRate, ErrorRate: c.ErrorRate, Outages: []windowDoc{},
	}
	for _, w := range c.Outages {
		d.Outages = append(d.Outages, windowDoc{From: w.From.String(), To: w.To.String()})
	}
	return d
}

// apply returns c with the knobs of d; Seed is kept.
func (d behaviorDoc) apply(c Config) (Config, error) {
	var err error
	if c.Latency, err = time.ParseDuration(d.Latency); err != nil {
		return c, fmt.Errorf("latency: %w", err)
	}
	if c.Jitter, err = time.ParseDuration(d.Jitter); err != nil {
		return c, fmt.Errorf("jitter: %w", err)
	}
	c.DeclineRate, c.ErrorRate = d.DeclineRate, d.ErrorRate
	c.Outages = nil
	for _, w := range d.Outages {
		from, err1 := time.ParseDuration(w.From)
		to, err2 := time.ParseDuration(w.To)
		if err := errors.Join(err1, err2); err != nil {
			return c, fmt.Errorf("outage %q..%q: %w", w.From, w.To, err)
		}
		c.Outages = append(c.Outages, Window{From: from, To: to})
	}
	return c, c.Validate()
}
