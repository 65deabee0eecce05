package warroom

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"
)

func TestRecordRoundTrip(t *testing.T) {
	f, clk := newFake(), newClock()
	var buf bytes.Buffer
	rec := NewRecorder(&buf)
	var prev *Snapshot
	for range 3 {
		clk.Add(time.Second)
		s := Collect(context.Background(), f.sources(), CollectOptions{Now: clk.Now})
		Derive(prev, &s)
		s.Alerts = Evaluate(DefaultAlerts(), &s)
		if err := rec.Write(s); err != nil {
			t.Fatal(err)
		}
		prev = &s
	}
	if n := strings.Count(buf.String(), "\n"); n != 3 {
		t.Fatalf("%d lines, want one per snapshot", n)
	}
	got, err := ReadRecords(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 || got[2].Version != RecordVersion || !got[2].At.Equal(prev.At) ||
		got[2].Items.Data[0].Remaining != 40 || got[2].Traffic.Data.Outcomes["RESERVED"] != 105 || got[2].Derived.WindowSeconds != 1 {
		t.Fatalf("read back %+v", got[2])
	}
	_, err = ReadRecords(strings.NewReader(`{"v":1}` + "\n" + `{"v":9}` + "\n"))
	if err == nil || !strings.Contains(err.Error(), "line 2") {
		t.Fatalf("newer version: %v", err)
	}
}
