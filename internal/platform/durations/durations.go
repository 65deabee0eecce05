// Package durations is how fsctl's JSON reports write a duration: milliseconds, as a number,
// named <name>Ms ("tookMs", "outageMs"). A field that had another name (a time.Duration's
// nanoseconds under "took", "outage", ...) keeps it, with its old value and unit, for one
// release, deprecated: MarshalMs writes both, UnmarshalMs reads either. The one exception is the
// load generator's records file header (preparedNs, timeoutNs), a versioned format fsctl blast
// --merge reads back.
package durations

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"time"
)

// Ms is d in milliseconds, to the microsecond: how a report's JSON writes a duration.
func Ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// FromMs is the duration of ms milliseconds (Ms read back).
func FromMs(ms float64) time.Duration {
	return time.Duration(math.Round(ms * float64(time.Millisecond)))
}

// MsField is a duration a report writes as <Name>Ms.
type MsField struct {
	Name string
	D    *time.Duration
}

// Field names d for MarshalMs and UnmarshalMs: it is written as <name>Ms.
func Field(name string, d *time.Duration) MsField { return MsField{name, d} }

// MarshalMs writes v, a struct, as one JSON object: its own fields (the deprecated names among
// them), then each field's <name>Ms. v must not marshal itself (pass a copy as a type without
// methods, type plain T, from T's MarshalJSON). Strings are not HTML-escaped here; the encoder
// that writes the report escapes them or not, as it would any value.
func MarshalMs(v any, fields ...MsField) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	b := bytes.TrimRight(buf.Bytes(), "\n")
	if len(b) < 2 || b[0] != '{' || b[len(b)-1] != '}' {
		return nil, fmt.Errorf("durations.MarshalMs: %T is not a JSON object", v)
	}
	b = b[:len(b)-1]
	for i, f := range fields {
		if len(b) > 1 || i > 0 {
			b = append(b, ',')
		}
		ms, err := json.Marshal(Ms(*f.D))
		if err != nil {
			return nil, err
		}
		b = append(append(append(append(b, '"'), f.Name...), `Ms":`...), ms...)
	}
	return append(b, '}'), nil
}

// UnmarshalMs reads b into v (its fields, the deprecated names among them: a report written
// before the <name>Ms fields has only those), then each field from its <name>Ms where b has one,
// which wins. v must not unmarshal itself (a pointer to a type without methods).
func UnmarshalMs(b []byte, v any, fields ...MsField) error {
	if err := json.Unmarshal(b, v); err != nil {
		return err
	}
	var keys map[string]json.RawMessage
	if err := json.Unmarshal(b, &keys); err != nil {
		return err
	}
	for _, f := range fields {
		raw, ok := keys[f.Name+"Ms"]
		if !ok || string(raw) == "null" {
			continue
		}
		var ms float64
		if err := json.Unmarshal(raw, &ms); err != nil {
			return fmt.Errorf("%sMs: %w", f.Name, err)
		}
		*f.D = FromMs(ms)
	}
	return nil
}
