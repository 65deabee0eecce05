package loadgen_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fsctl/fsctl/loadgen"
)

// TestRefreshSlots: every refresher's loads fall in the window before the release (and after it
// for After), none in the quiet band around it, evenly spaced per buyer and staggered between
// buyers, so the whole burst's loads never share an instant.
func TestRefreshSlots(t *testing.T) {
	at := time.Unix(1_000_000, 0)
	r := loadgen.Refresh{Before: 10, After: 2, Window: time.Second, Share: 1}
	const n = 50
	var all []time.Time
	for k := range n {
		s := r.Slots(at, k, n)
		if len(s) != 12 || !slices.IsSortedFunc(s, time.Time.Compare) {
			t.Fatalf("buyer %d: %d slots %v, want 12 in order", k, len(s), s)
		}
		for j, ts := range s[:10] {
			if ts.Before(at.Add(-time.Second)) || ts.After(at.Add(-10*time.Millisecond)) {
				t.Fatalf("buyer %d load %d at %s from the release: outside the window or in the quiet band", k, j, ts.Sub(at))
			}
			if j > 0 {
				if gap := ts.Sub(s[j-1]); gap < 98*time.Millisecond || gap > 100*time.Millisecond {
					t.Fatalf("buyer %d: gap %s between loads, want the window over 10", k, gap)
				}
			}
		}
		for _, ts := range s[10:] {
			if !ts.After(at.Add(10*time.Millisecond)) || ts.After(at.Add(time.Second)) {
				t.Fatalf("buyer %d: a load after the release at %s", k, ts.Sub(at))
			}
		}
		all = append(all, s...)
	}
	slices.SortFunc(all, time.Time.Compare)
	if len(slices.CompactFunc(all, time.Time.Equal)) != n*12 {
		t.Error("two loads share an instant: buyers are not staggered")
	}
}

// TestRefreshShareIsSeeded: the same seed picks the same refreshers, about Share of them.
func TestRefreshShareIsSeeded(t *testing.T) {
	r := loadgen.Refresh{Before: 1, Window: time.Second, Share: 0.3, Seed: 42}
	n := 0
	for k := range 10000 {
		if r.Refreshes(k) {
			n++
		}
		if first := r.Refreshes(k); r.Refreshes(k) != first {
			t.Fatal("not repeatable")
		}
	}
	if n < 2800 || n > 3200 {
		t.Errorf("%d of 10000 refresh, want about 3000", n)
	}
	if !(loadgen.Refresh{Share: 1}).Refreshes(7) || (loadgen.Refresh{Share: 0}).Refreshes(7) {
		t.Error("share 1 must take everyone, share 0 nobody")
	}
}

// TestReadPlanValidation: bad counts, windows, shares and polls are refused; a target without a
// sale page cannot be refreshed; polling is fsctl serve's.
func TestReadPlanValidation(t *testing.T) {
	good := loadgen.Plan{BaseURL: "http://x", Targets: []loadgen.Target{{SaleID: "s", ItemID: "i"}}, Buyers: 1, Secret: []byte("0123456789abcdef"),
		Clicks: 1, Conns: 1, Timeout: time.Second, At: time.Unix(1, 0),
		Refresh: &loadgen.Refresh{Before: 10, Window: time.Second, Share: 1}, Poll: &loadgen.OrderPoll{Interval: time.Millisecond, Wait: time.Second}}
	if err := good.Validate(); err != nil {
		t.Fatal(err)
	}
	for name, tc := range map[string]struct {
		mod  func(*loadgen.Plan)
		word string
	}{
		"negative before":   {func(p *loadgen.Plan) { p.Refresh.Before = -1 }, "negative"},
		"negative after":    {func(p *loadgen.Plan) { p.Refresh.After = -1 }, "negative"},
		"zero window":       {func(p *loadgen.Plan) { p.Refresh.Window = 0 }, "window"},
		"share above one":   {func(p *loadgen.Plan) { p.Refresh.Share = 1.5 }, "share"},
		"negative share":    {func(p *loadgen.Plan) { p.Refresh.Share = -0.1 }, "share"},
		"negative pool":     {func(p *loadgen.Plan) { p.ReadConns = -1 }, "read conns"},
		"zero interval":     {func(p *loadgen.Plan) { p.Poll.Interval = 0 }, "interval"},
		"zero wait":         {func(p *loadgen.Plan) { p.Poll.Wait = 0 }, "wait"},
		"no sale page":      {func(p *loadgen.Plan) { f := foreign(); f.HTTP.SalePage = ""; p.Profile, p.Poll = f, nil }, "http.salePage"},
		"poll of a foreign": {func(p *loadgen.Plan) { p.Profile, p.Refresh = foreign(), nil }, "http.order"},
	} {
		p := good
		r, o := *good.Refresh, *good.Poll
		p.Refresh, p.Poll = &r, &o
		tc.mod(&p)
		if err := p.Validate(); err == nil || !strings.Contains(err.Error(), tc.word) {
			t.Errorf("%s: %v, want an error naming %q", name, err, tc.word)
		}
	}
}
