package steps

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"
)

func TestRunnerRecordsAndPrintsEachStep(t *testing.T) {
	clock := time.Unix(0, 0)
	var lines []string
	r := &Runner{Now: func() time.Time { clock = clock.Add(time.Second); return clock }, Print: func(l string) { lines = append(lines, l) }}
	ctx := context.Background()
	if err := r.Run(ctx, "burst", func(context.Context) (string, bool, error) { return "100 buyers", true, nil }); err != nil {
		t.Fatal(err)
	}
	if err := r.Run(ctx, "verify", func(context.Context) (string, bool, error) { return "1 broken", false, nil }); err != nil {
		t.Fatalf("a failed check is recorded, not an error: %v", err)
	}
	err := r.Run(ctx, "settle", func(context.Context) (string, bool, error) { return "", true, errors.New("redis down") })
	if err == nil || err.Error() != "settle: redis down" {
		t.Fatalf("a step that cannot run: %v", err)
	}
	ss := r.Steps()
	if len(ss) != 3 || ss[0] != (Step{Name: "burst", Took: time.Second, Detail: "100 buyers", OK: true}) ||
		ss[1].OK || ss[1].Word() != "FAILED" || ss[2].OK || ss[2].Error != "redis down" || ss[2].Word() != "ERROR" || OK(ss) || !OK(ss[:1]) {
		t.Fatalf("steps %+v", ss)
	}
	want := "burst ...|burst OK in 1s: 100 buyers|verify ...|verify FAILED in 1s: 1 broken|settle ...|settle ERROR after 1s: redis down"
	if got := strings.Join(lines, "|"); got != want {
		t.Fatalf("printed\n%s\nwant\n%s", got, want)
	}
}

func TestAnInterruptedStepSaysSo(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	r := &Runner{}
	err := r.Run(ctx, "burst", func(context.Context) (string, bool, error) { cancel(); return "", false, errors.New("broken pipe") })
	if !errors.Is(err, context.Canceled) || !strings.Contains(r.Steps()[0].Error, "interrupted") {
		t.Fatalf("interrupted: %v %+v", err, r.Steps())
	}
}

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
