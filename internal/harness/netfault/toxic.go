package netfault

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
)

// Toxic is one kind of network trouble on a proxy, as Toxiproxy names it.
type Toxic struct {
	// Type is latency, bandwidth, timeout, reset_peer, slicer or limit_data.
	Type string
	// Stream is downstream (service to client), upstream (client to service) or both.
	Stream string
	// Toxicity is the share of connections it acts on (0 < t <= 1); 0 means all of them.
	Toxicity float32
	// Attributes are the type's settings (Kinds), whole numbers.
	Attributes map[string]int
}

// The streams a toxic acts on.
const (
	Downstream = "downstream"
	Upstream   = "upstream"
	Both       = "both"
)

// Kinds are the toxics a step may add, each with its attributes and what they mean.
var Kinds = map[string]map[string]string{
	"latency":    {"latency": "milliseconds added to each chunk", "jitter": "± milliseconds at random"},
	"bandwidth":  {"rate": "at most this many KB/s"},
	"timeout":    {"timeout": "milliseconds before the connection is closed; 0: nothing passes and nothing is closed, a black hole"},
	"reset_peer": {"timeout": "milliseconds before the connection is reset (TCP RST)"},
	"slicer":     {"average_size": "bytes per slice", "size_variation": "± bytes", "delay": "microseconds between slices"},
	"limit_data": {"bytes": "bytes let through before the connection is closed"},
}

// Latency is latency (and jitter at random) added to each chunk, both ways.
func Latency(latency, jitter time.Duration) Toxic {
	return Toxic{Type: "latency", Stream: Both, Attributes: map[string]int{"latency": int(latency.Milliseconds()), "jitter": int(jitter.Milliseconds())}}
}

// Partition lets no byte through either way and closes nothing: clients time out rather than
// fail fast, as behind a switch that drops packets.
func Partition() Toxic {
	return Toxic{Type: "timeout", Stream: Both, Attributes: map[string]int{"timeout": 0}}
}

// Validate checks the type, the stream, the toxicity and that every attribute is the type's and
// not negative; an error names the one to fix and what is known.
func (t Toxic) Validate() error {
	known, ok := Kinds[t.Type]
	if !ok {
		return fmt.Errorf("toxic %q: want one of %s", t.Type, strings.Join(slices.Sorted(maps.Keys(Kinds)), ", "))
	}
	switch t.Stream {
	case "", Downstream, Upstream, Both:
	default:
		return fmt.Errorf("toxic %s: stream %q: want downstream, upstream or both", t.Type, t.Stream)
	}
	if t.Toxicity < 0 || t.Toxicity > 1 {
		return fmt.Errorf("toxic %s: toxicity %g: want a share between 0 and 1", t.Type, t.Toxicity)
	}
	for _, k := range slices.Sorted(maps.Keys(t.Attributes)) {
		if _, ok := known[k]; !ok {
			return fmt.Errorf("toxic %s: no attribute %q (it has %s)", t.Type, k, strings.Join(slices.Sorted(maps.Keys(known)), ", "))
		}
		if t.Attributes[k] < 0 {
			return fmt.Errorf("toxic %s: %s %d: must not be negative", t.Type, k, t.Attributes[k])
		}
	}
	return nil
}

// streams are the Toxiproxy streams the toxic goes on: one toxic on each for Both.
func (t Toxic) streams() []string {
	switch t.Stream {
	case Both:
		return []string{Upstream, Downstream}
	case "":
		return []string{Downstream}
	}
	return []string{t.Stream}
}

func (t Toxic) toxicity() float32 {
	if t.Toxicity == 0 {
		return 1
	}
	return t.Toxicity
}

// String is the toxic in words: "latency 200ms ±50ms both ways".
func (t Toxic) String() string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(t.Attributes)) {
		parts = append(parts, fmt.Sprintf("%s=%d", k, t.Attributes[k]))
	}
	s := t.Type
	if len(parts) > 0 {
		s += " " + strings.Join(parts, " ")
	}
	stream := t.Stream
	if stream == "" {
		stream = Downstream
	}
	s += " " + stream
	if t.Toxicity > 0 && t.Toxicity < 1 {
		s += fmt.Sprintf(" on %.0f%% of connections", t.Toxicity*100)
	}
	return s
}
