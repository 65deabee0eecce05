package blast_test

import (
	"context"
	"testing"
	"time"

	"github.com/fsctl/fsctl/internal/contract/outcome"
	"github.com/fsctl/fsctl/loadgen"
)

func TestParseRate(t *testing.T) {
	for in, want := range map[string]float64{"500/s": 500, "600/m": 10, "2.5": 2.5} {
		if got, err := loadgen.ParseRate(in); err != nil || got != want {
			t.Errorf("ParseRate(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"", "0/s", "-5/s", "fast", "5/h", "Inf/s"} {
		if _, err := loadgen.ParseRate(in); err == nil {
			t.Errorf("ParseRate(%q) accepted", in)
		}
	}
}

// TestScheduleOffsets checks the arithmetic of the ramp and the steady rate, and that Count and
// Offset agree: exactly Count(d) buyers are meant to go before d.
func TestScheduleOffsets(t *testing.T) {
	s := loadgen.Schedule{Rate: 100, Ramp: 2 * time.Second} // the ramp releases 100 buyers
	for k, want := range map[int]time.Duration{0: 0, 25: time.Second, 100: 2 * time.Second, 150: 2500 * time.Millisecond} {
		if got := s.Offset(k); (got - want).Abs() > time.Microsecond {
			t.Errorf("Offset(%d) = %s, want %s", k, got, want)
		}
	}
	for _, s := range []loadgen.Schedule{s, {Rate: 7}, {Rate: 1000, Ramp: 30 * time.Second}} {
		for _, d := range []time.Duration{time.Second, 1500 * time.Millisecond, 3 * time.Second, time.Minute} {
			n := s.Count(d)
			if s.Offset(n-1) >= d || s.Offset(n) < d {
				t.Errorf("%+v: Count(%s) = %d but Offset(n-1) = %s, Offset(n) = %s", s, d, n, s.Offset(n-1), s.Offset(n))
			}
		}
		for k := 1; k < 2000; k++ {
			if s.Offset(k) < s.Offset(k-1) {
				t.Fatalf("%+v: buyer %d goes before buyer %d", s, k, k-1)
			}
		}
	}
	for _, bad := range []loadgen.Schedule{{}, {Rate: -1}, {Rate: 5, Ramp: -time.Second}} {
		if bad.Validate() == nil {
			t.Errorf("%+v accepted", bad)
		}
	}
}

// TestOpenModelFollowsTheSchedule releases 200 buyers at 400/s after a 250 ms ramp: each record's
// intended time is its place on the schedule (not the moment it really went), and nothing is
// written before it.
func TestOpenModelFollowsTheSchedule(t *testing.T) {
	c := startCheckout(t, 50, 1)
	p := plan(c.base, []loadgen.Target{{SaleID: c.sale.ID, ItemID: "hot"}}, 200)
	s := loadgen.Schedule{Rate: 400, Ramp: 250 * time.Millisecond}
	p.Schedule = &s
	res, err := loadgen.Run(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Records) != 200 || outcomes(res.Records)[outcome.Reserved] != 50 {
		t.Fatalf("%d records, outcomes %v", len(res.Records), outcomes(res.Records))
	}
	for _, r := range res.Records {
		if want := p.At.Add(s.Offset(r.Buyer)); !r.Intended.Equal(want) {
			t.Fatalf("buyer %d intended at %s, want %s on the schedule", r.Buyer, r.Intended.Sub(p.At), want.Sub(p.At))
		}
		if r.Started.Before(r.Intended) || r.Written.Before(r.Intended) || r.Done.Before(r.Written) {
			t.Fatalf("buyer %d went before its time: %+v", r.Buyer, r)
		}
	}
	if last := res.Records[len(res.Records)-1]; last.Intended.Sub(p.At) != s.Offset(199) || s.Offset(199) < 600*time.Millisecond {
		t.Errorf("the last buyer is meant at %s, want %s", last.Intended.Sub(p.At), s.Offset(199))
	}
}
