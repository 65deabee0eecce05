package loadgen

import (
	"fmt"
	"time"
)

// EngineAuto, the default engine ("" too), runs a plan on EngineRaw wherever the raw engine can
// carry it and on EngineHTTP otherwise: a direct purchase gets the fastest release without anyone
// having to ask for it, and a journey raw cannot send still runs.
const EngineAuto = "auto"

// The automatic timeout is autoTimeoutBase plus one second per autoTimeoutRate clicks. A burst's
// requests all arrive at the release and queue at the target, so the last answer comes about
// clicks/rate after the first: a fixed 10 s left ~20,000 buyers of a 50,000-buyer burst TIMEOUT.
const (
	autoTimeoutBase = 10 * time.Second
	autoTimeoutRate = 2000 // requests per second the target is assumed to answer at least
)

// Resolution is how a plan's automatic settings were settled, once, before its run; the report
// carries it so nobody misreads which engine and which bound produced the numbers.
type Resolution struct {
	// Engine is the engine that runs the plan: EngineHTTP or EngineRaw, never auto.
	Engine string
	// EngineAuto says the plan asked for auto (or gave no engine).
	EngineAuto bool
	// Fallback, when auto chose http, is why the raw engine could not run the plan.
	Fallback string
	// Timeout bounds each request.
	Timeout time.Duration
	// TimeoutAuto says the plan gave no timeout and Timeout was computed from its size.
	TimeoutAuto bool
	// HTTP is the HTTP version the plan asked for (HTTP1, HTTP2); "" or HTTPAuto when it left
	// the choice to the target. What each request really went over is its Record.Protocol.
	HTTP string
}

// Resolve settles the plan's engine and request timeout. Auto picks raw when the raw engine
// supports the plan and http otherwise, with the reason; an explicit engine is kept as given
// (Validate refuses an explicit raw the plan cannot use). A zero Timeout is AutoTimeout.
func (p Plan) Resolve() Resolution {
	r := Resolution{Engine: p.Engine, Timeout: p.Timeout, HTTP: p.HTTP}
	if p.Engine == "" || p.Engine == EngineAuto {
		r.Engine, r.EngineAuto = EngineRaw, true
		if err := p.rawSupported(); err != nil {
			r.Engine, r.Fallback = EngineHTTP, err.Error()
		}
	}
	if p.Timeout == 0 {
		r.Timeout, r.TimeoutAuto = p.AutoTimeout(), true
	}
	return r
}

// String says which engine and request timeout a burst runs with, and why when auto chose them.
func (r Resolution) String() string {
	engine := r.Engine
	switch {
	case r.Fallback != "":
		engine += " (auto; not raw: " + r.Fallback + ")"
	case r.EngineAuto:
		engine += " (auto)"
	}
	if r.HTTP != "" && r.HTTP != HTTPAuto {
		engine += ", http " + r.HTTP
	}
	timeout := r.Timeout.String()
	if r.TimeoutAuto {
		timeout += fmt.Sprintf(" (auto: %s + 1s per %d clicks)", autoTimeoutBase, autoTimeoutRate)
	}
	return "engine: " + engine + "; request timeout " + timeout
}

// AutoTimeout is the request timeout a plan gets when it gives none: 10 s plus one second per
// 2,000 clicks of the whole burst (buyers × clicks, every shard), so a 50,000-buyer burst gets
// 35 s. It assumes the target answers at least 2,000 requests a second; a slower one needs an
// explicit Timeout. An open-model plan gets the same, which only makes its bound generous.
func (p Plan) AutoTimeout() time.Duration {
	clicks := max(p.Buyers, 0) * max(p.Clicks, 1)
	return autoTimeoutBase + time.Duration(clicks)*time.Second/autoTimeoutRate
}

// resolved is the plan with its engine and timeout settled, and how they were.
func (p Plan) resolved() (Plan, Resolution) {
	r := p.Resolve()
	p.Engine, p.Timeout = r.Engine, r.Timeout
	return p, r
}
