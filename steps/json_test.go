package steps

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// A step's JSON has its duration in milliseconds as tookMs and, for one release, the deprecated
// took in nanoseconds; a step written before tookMs still reads.
func TestStepJSONHasTookMsAndTheDeprecatedTook(t *testing.T) {
	s := Step{Name: "burst <a&b>", Took: 1500*time.Millisecond + 250*time.Microsecond, Detail: "100 buyers", OK: true}
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	var keys map[string]any
	if err := json.Unmarshal(b, &keys); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	if keys["tookMs"] != 1500.25 || keys["took"] != float64(1500250000) || keys["name"] != s.Name {
		t.Errorf("JSON %s: want tookMs 1500.25 and took 1500250000", b)
	}
	var back Step
	if err := json.Unmarshal(b, &back); err != nil || back != s {
		t.Errorf("read back %+v, %v; want %+v", back, err, s)
	}
	var old Step
	if err := json.Unmarshal([]byte(`{"name":"settle","took":2000000000,"ok":true}`), &old); err != nil || old.Took != 2*time.Second || old.Name != "settle" {
		t.Errorf("a step written before tookMs: %+v, %v", old, err)
	}
	var only Step
	if err := json.Unmarshal([]byte(`{"name":"settle","tookMs":12.5}`), &only); err != nil || only.Took != 12500*time.Microsecond {
		t.Errorf("a step with tookMs only: %+v, %v", only, err)
	}
	// An encoder that does not escape HTML gets the step's text as it is.
	var sb strings.Builder
	enc := json.NewEncoder(&sb)
	enc.SetEscapeHTML(false)
	if err := enc.Encode([]Step{s}); err != nil || !strings.Contains(sb.String(), `"burst <a&b>"`) {
		t.Errorf("unescaped: %s, %v", sb.String(), err)
	}
}

func TestMsRoundTrips(t *testing.T) {
	for _, d := range []time.Duration{0, time.Microsecond, 1234567 * time.Microsecond, 90 * time.Minute, -3 * time.Millisecond} {
		if got := FromMs(Ms(d)); got != d {
			t.Errorf("FromMs(Ms(%s)) = %s", d, got)
		}
	}
	if b, err := MarshalMs(struct{}{}, Field("took", new(time.Duration))); err != nil || string(b) != `{"tookMs":0}` {
		t.Errorf("an empty object: %s, %v", b, err)
	}
	if _, err := MarshalMs([]int{1}); err == nil {
		t.Error("MarshalMs of an array: no error")
	}
}
