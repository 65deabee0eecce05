package yamlfield

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// What a value should look like, said once for every file: a message names the value as written
// and how to write it, never the Go type it was meant for.
const (
	durationHint = "write it like 90s, 10m or 1h30m"
	timeHint     = "write it like 2026-12-01T12:00:00Z (RFC 3339, with its zone)"
	rateHint     = "write it like 250/s (per second), 600/m (per minute) or 250"
)

// Duration reads a duration scalar: 90s, 10m, 1h30m, as Go's time.ParseDuration reads them.
// A bare number is refused: 600 of what?
func Duration(n *yaml.Node) (time.Duration, error) {
	if err := single(n); err != nil {
		return 0, err
	}
	var d time.Duration
	if n.ShortTag() != "!!str" || n.Decode(&d) != nil {
		return 0, fmt.Errorf("%s is not a duration: %s", quote(n.Value), durationHint)
	}
	return d, nil
}

// Time reads a point in time: an RFC 3339 timestamp (or a date).
func Time(n *yaml.Node) (time.Time, error) {
	if err := single(n); err != nil {
		return time.Time{}, err
	}
	var t time.Time
	if n.Decode(&t) != nil {
		return time.Time{}, fmt.Errorf("%s is not a time: %s", quote(n.Value), timeHint)
	}
	return t, nil
}

// Int reads a whole number (1000, 1_000, 0x10); 1.0 is whole, 1.5 is not.
func Int(n *yaml.Node) (int64, error) {
	if err := single(n); err != nil {
		return 0, err
	}
	var v int64
	if err := n.Decode(&v); err != nil || !whole(n) {
		return 0, notWhole(n)
	}
	return v, nil
}

// Uint reads a whole number that is not negative.
func Uint(n *yaml.Node) (uint64, error) {
	if err := single(n); err != nil {
		return 0, err
	}
	var v uint64
	if err := n.Decode(&v); err != nil || !whole(n) {
		if i, ierr := Int(n); ierr == nil && i < 0 {
			return 0, fmt.Errorf("%s: must not be negative", n.Value)
		}
		return 0, notWhole(n)
	}
	return v, nil
}

// Float reads a number (2.5, 100, 1e3). NaN is refused: no setting means "not a number".
func Float(n *yaml.Node) (float64, error) {
	if err := single(n); err != nil {
		return 0, err
	}
	var v float64
	if err := n.Decode(&v); err != nil || math.IsNaN(v) {
		return 0, fmt.Errorf("%s is not a number: write it like 2.5 or 100", quote(n.Value))
	}
	return v, nil
}

// Bool reads true or false (and YAML 1.1's yes, no, on, off, which yaml.v3 still takes).
func Bool(n *yaml.Node) (bool, error) {
	if err := single(n); err != nil {
		return false, err
	}
	var v bool
	if err := n.Decode(&v); err != nil {
		return false, fmt.Errorf("%s is not true or false", quote(n.Value))
	}
	return v, nil
}

// Rate reads a rate in events per second: 250/s, 600/m (per minute) or a plain 250. It is never
// negative, infinite or NaN; whether zero will do is the caller's to say.
func Rate(n *yaml.Node) (float64, error) {
	if err := single(n); err != nil {
		return 0, err
	}
	num, unit, _ := strings.Cut(n.Value, "/")
	per := 1.0
	switch unit {
	case "", "s":
	case "m":
		per = 60
	default:
		num = "x" // refused below, with the same words
	}
	v, err := strconv.ParseFloat(strings.ReplaceAll(strings.TrimSpace(num), "_", ""), 64)
	if err != nil || v < 0 || math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, fmt.Errorf("%s is not a rate: %s", quote(n.Value), rateHint)
	}
	return v / per, nil
}

// single refuses a list or a mapping where one value belongs.
func single(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode {
		return nil
	}
	return fmt.Errorf("want a single value, not %s", kindWords(n))
}

// whole reports whether a number node has no fraction: yaml.v3 would truncate 1.5 into an int.
func whole(n *yaml.Node) bool {
	if n.ShortTag() != "!!float" {
		return true
	}
	var f float64
	return n.Decode(&f) == nil && f == math.Trunc(f)
}

func notWhole(n *yaml.Node) error {
	if t := n.ShortTag(); (t == "!!int" || t == "!!float") && whole(n) {
		return fmt.Errorf("%s is out of range", n.Value)
	}
	return fmt.Errorf("%s is not a whole number: write it like 10 or 1000", quote(n.Value))
}

// quote shows a value as the file wrote it, cut short when it is long.
func quote(s string) string {
	if r := []rune(s); len(r) > 40 {
		s = string(r[:40]) + "…"
	}
	return strconv.Quote(s)
}
