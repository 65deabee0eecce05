package main

import (
	"testing"
	"time"

	"github.com/fsctl/fsctl/loadgen"
)

func TestBlastJourneyFlagErrors(t *testing.T) {
	for _, args := range [][]string{
		{"--rate", "fast"},
		{"--rate", "0/s"},
		{"--rate", "10/h"},
		{"--ramp", "10s"},
		{"--duration", "10s"},
		{"--rate", "10/s", "--ramp", "-1s"},
		{"--pay", "0.7", "--cancel", "0.4"},
		{"--pay", "-1"},
		{"--room", "--max-poll", "0s"},
		{"--max-skew", "-1s"},
		{"--seed", "x"},
	} {
		_, code, err := runCLI(t, append([]string{"blast", "--sale", "s", "--item", "i"}, args...)...)
		if code != 2 || err == nil || err.Error() == "" {
			t.Errorf("blast %v: exit %d, %v; want 2 with a message", args, code, err)
		}
	}
}

// TestBlastJourneyFlagsMakeThePlan: the flags end up in the plan the package runs.
func TestBlastJourneyFlagsMakeThePlan(t *testing.T) {
	o := blastOptions{target: "http://127.0.0.1:1", sale: "s", items: []string{"i"}, buyers: 10, conns: 1, clicks: 1,
		in: time.Second, timeout: time.Second, shard: "0/1", secret: jwtSecretFlag{value: "x"}, stock: -1, limit: -1,
		room: true, maxPoll: 200 * time.Millisecond, roomWait: time.Minute, pay: 0.5, cancel: 0.25, seed: 9,
		rate: 100, ramp: 2 * time.Second, duration: 5 * time.Second, maxSkew: time.Second}
	p, _, err := o.plan(time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if r, ok := p.Journey.(*loadgen.Room); !ok || r.MaxPoll != 200*time.Millisecond || r.Wait != time.Minute {
		t.Errorf("journey %#v", p.Journey)
	}
	if p.After == nil || *p.After != (loadgen.AfterPurchase{Pay: 0.5, Cancel: 0.25, Seed: 9}) {
		t.Errorf("after %+v", p.After)
	}
	// 100 buyers on the 2 s ramp, then 3 s at 100/s: --duration overrides --buyers.
	if p.Schedule == nil || p.Schedule.Rate != 100 || p.Schedule.Ramp != 2*time.Second || p.Schedule.Offsets != nil || p.Buyers != 400 {
		t.Errorf("schedule %+v, buyers %d", p.Schedule, p.Buyers)
	}
}
