package main

import (
	"strings"
	"testing"
	"time"

	"github.com/fsctl/fsctl/loadgen"
)

// TestBlastRevealFlag: --reveal takes auto, on or off; on makes the buyers fetch their path (in
// the waiting room too) and refuses the raw engine, whose bytes are built before the path exists.
func TestBlastRevealFlag(t *testing.T) {
	_, code, err := runCLI(t, "blast", "--sale", "s", "--item", "i", "--reveal", "maybe")
	if code != 2 || err == nil || !strings.Contains(err.Error(), "auto, on or off") {
		t.Errorf("--reveal maybe: exit %d, %v; want 2 naming the values", code, err)
	}
	_, code, err = runCLI(t, "blast", "--sale", "s", "--item", "i", "--reveal", "on", "--engine", "raw")
	if code != 2 || err == nil || !strings.Contains(err.Error(), "--engine http") {
		t.Errorf("--reveal on --engine raw: exit %d, %v; want 2 naming --engine http", code, err)
	}
	o := blastOptions{target: "http://127.0.0.1:1", sale: "s", items: []string{"i"}, buyers: 10, conns: 1, clicks: 1,
		in: time.Second, timeout: time.Second, shard: "0/1", secret: jwtSecretFlag{value: "x"}, stock: -1, limit: -1,
		maxPoll: time.Second, roomWait: time.Minute, reveal: "on"}
	p, _, err := o.plan(time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := p.Journey.(*loadgen.Reveal); !ok || p.Resolve().Engine != loadgen.EngineHTTP {
		t.Errorf("--reveal on: journey %#v, engine %s", p.Journey, p.Resolve().Engine)
	}
	o.room = true
	if p, _, err = o.plan(time.Now()); err != nil {
		t.Fatal(err)
	}
	if r, ok := p.Journey.(*loadgen.Room); !ok || r.Reveal == nil || r.MaxPoll != time.Second {
		t.Errorf("--room --reveal on: journey %#v", p.Journey)
	}
	for _, mode := range []string{"auto", "off"} {
		o.room, o.reveal = false, mode
		if p, _, err = o.plan(time.Now()); err != nil || p.Journey != nil {
			t.Errorf("--reveal %s: journey %#v, %v; want the plain purchase (auto decides from the sale page)", mode, p.Journey, err)
		}
	}
}
