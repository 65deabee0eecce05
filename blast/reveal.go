package blast

import (
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/fsctl/fsctl/loadgen"
)

// Reveal modes: whether buyers fetch a revealed purchase path before they buy (--reveal).
const (
	// RevealAuto follows the reveal wherever fsctl serve's sale page says a target sale has it on.
	RevealAuto = "auto"
	// RevealOn always fetches the path first (fsctl serve names the plain route for a sale
	// without reveal, so it works there too).
	RevealOn = "on"
	// RevealOff fires at the plain purchase route: against a reveal sale every purchase is
	// refused (403), which is what a script that ignores the reveal gets.
	RevealOff = "off"
)

// ParseReveal checks a --reveal value; "" is RevealAuto.
func ParseReveal(s string) (string, error) {
	switch s {
	case "", RevealAuto:
		return RevealAuto, nil
	case RevealOn, RevealOff:
		return s, nil
	}
	return "", fmt.Errorf("--reveal %q: want auto, on or off", s)
}

// WithReveal makes the plan's buyers follow revealed purchase paths: the direct purchase becomes
// the Reveal journey, the waiting room buys through the path once admitted. A plan that already
// follows them is returned as it is.
func WithReveal(p loadgen.Plan) loadgen.Plan {
	switch j := p.Journey.(type) {
	case nil, loadgen.Purchase:
		p.Journey = &loadgen.Reveal{}
	case *loadgen.Room:
		if j.Reveal == nil {
			room := &loadgen.Room{MaxPoll: j.MaxPoll, Wait: j.Wait, Reveal: &loadgen.Reveal{}}
			p.Journey = room
		}
	}
	return p
}

// followsReveals reports whether the plan's buyers can follow a revealed purchase path: its
// profile declares where a buyer asks for one (http.purchasePath).
func followsReveals(p loadgen.Plan) bool { return p.Profile.HTTP.PurchasePath != "" }

// followReveal settles the reveal before the burst: under RevealOn the buyers follow it; under
// RevealAuto (the default) they do when the sale pages blast read for the stock and limit (fsctl
// serve's, without --stock/--limit) said reveal is on for the sales named in reveals and the
// profile declares where to ask for a path (http.purchasePath). A plan that
// cannot follow it (an explicit --engine raw) is an error naming the flags that fix it, never a
// burst fired at a route the server refuses.
func (b Burst) followReveal(reveals []string, progress io.Writer) (loadgen.Plan, error) {
	p := b.Plan
	mode, err := ParseReveal(b.Reveal)
	if err != nil {
		return p, err
	}
	if mode == RevealOn && !p.Reveals() {
		p = WithReveal(p)
		return p, p.Validate()
	}
	if mode != RevealAuto || p.Reveals() || len(reveals) == 0 || !followsReveals(p) {
		return p, nil
	}
	sales := strings.Join(reveals, ", ")
	if p.Engine == loadgen.EngineRaw {
		return p, fmt.Errorf("sale %s reveals its purchase path at the opening (its page says reveal: true) and the raw engine cannot fetch it: "+
			"use --engine http (or auto); --reveal off fires at the plain purchase route anyway, which the server refuses (403)", sales)
	}
	fmt.Fprintf(progress, "reveal: sale %s hides its purchase path until the opening: at the release every buyer asks for its own path "+
		"(GET .../purchase-path) and buys through it (--reveal off fires at the plain route instead)\n", sales)
	p = WithReveal(p)
	return p, p.Validate()
}

// warnRefused says what to do when purchases that did not follow a reveal were refused 403:
// under --stock/--limit auto never read the sale page that says a sale reveals its path.
func warnRefused(w io.Writer, p loadgen.Plan, mode string, recs []loadgen.Record) {
	if p.Reveals() || mode == RevealOff || !followsReveals(p) {
		return
	}
	n := 0
	for _, r := range recs {
		if r.Status == http.StatusForbidden {
			n++
		}
	}
	if n > 0 {
		fmt.Fprintf(w, "warning: %d purchases were refused 403 (CLIENT_ERROR): a sale that reveals its purchase path at the opening refuses the plain route; "+
			"rerun with --reveal on (auto finds out from the sale page, which --stock/--limit skip)\n", n)
	}
}

// RenderReveal prints how the buyers' purchase paths went.
func RenderReveal(w io.Writer, c loadgen.RevealCounts) error {
	line := fmt.Sprintf("reveal: %d purchase paths fetched, %d asks refused or unanswered", c.Fetched, c.Failed)
	if c.Refetched > 0 || c.Refused > 0 {
		line += fmt.Sprintf("; %d purchases answered 403 fetched a new path, %d refused through a fresh one", c.Refetched, c.Refused)
	}
	_, err := fmt.Fprintln(w, line)
	return err
}
