package steps

import (
	"context"
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
