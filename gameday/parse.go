package gameday

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// LineError is a problem with a scenario file, at the line it was found.
type LineError struct {
	Line int
	Msg  string
}

func (e *LineError) Error() string {
	if e.Line <= 0 {
		return e.Msg
	}
	return fmt.Sprintf("line %d: %s", e.Line, e.Msg)
}

func lineErr(n *yaml.Node, format string, args ...any) error {
	return &LineError{Line: n.Line, Msg: fmt.Sprintf(format, args...)}
}

// LoadFile reads and parses a scenario file; errors name the file and the line.
func LoadFile(path string) (Scenario, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return Scenario{}, err
	}
	s, err := Parse(b)
	if err != nil {
		return s, fmt.Errorf("%s: %w", path, err)
	}
	return s, nil
}

// Parse reads a scenario. Unknown keys, missing ones and values of the wrong kind are errors that
// name their line; defaults fill what may be left out.
func Parse(b []byte) (Scenario, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(b, &doc); err != nil {
		var te *yaml.TypeError
		if errors.As(err, &te) {
			return Scenario{}, &LineError{Msg: strings.Join(te.Errors, "; ")}
		}
		line, msg := yamlErrLine(err.Error())
		return Scenario{}, &LineError{Line: line, Msg: msg}
	}
	if len(doc.Content) == 0 {
		return Scenario{}, &LineError{Line: 1, Msg: "empty scenario"}
	}
	root, err := mapping(doc.Content[0], "name", "seed", "sale", "servers", "buyers", "rate", "ramp",
		"pay", "cancel", "retries", "replays", "settle", "budget", "steps")
	if err != nil {
		return Scenario{}, err
	}
	s := Scenario{Name: "unnamed", Servers: 2, Retries: 3, Settle: 60 * time.Second}
	p := &parser{}
	p.str(root, "name", &s.Name)
	p.uint(root, "seed", &s.Seed)
	p.int(root, "servers", &s.Servers, 1, 16)
	p.int(root, "buyers", &s.Buyers, 1, 1_000_000)
	p.rate(root, "rate", &s.Rate)
	p.dur(root, "ramp", &s.Ramp)
	p.share(root, "pay", &s.Pay)
	p.share(root, "cancel", &s.Cancel)
	p.int(root, "retries", &s.Retries, 0, 10)
	p.int(root, "replays", &s.Replays, 0, 5)
	p.dur(root, "settle", &s.Settle)
	if p.err != nil {
		return s, p.err
	}
	if n := root.get("budget"); n != nil {
		bm, err := mapping(n, "undecided", "outage")
		if err != nil {
			return s, err
		}
		s.Budget = &Budget{Undecided: -1, Outage: -1}
		p.share(bm, "undecided", &s.Budget.Undecided)
		p.dur(bm, "outage", &s.Budget.Outage)
		if p.err != nil {
			return s, p.err
		}
		if s.Budget.Undecided < 0 && s.Budget.Outage < 0 {
			return s, lineErr(n, "budget: say undecided (a share of buyers) or outage (a duration), or both")
		}
	}
	for _, k := range []string{"sale", "buyers", "rate"} {
		if root.get(k) == nil {
			return s, lineErr(root.node, "missing %q", k)
		}
	}
	if s.Pay+s.Cancel > 1 {
		return s, lineErr(root.get("pay"), "pay %g + cancel %g is more than 1", s.Pay, s.Cancel)
	}
	if s.Sale, err = parseSale(root.get("sale")); err != nil {
		return s, err
	}
	if n := root.get("steps"); n != nil {
		if n.Kind != yaml.SequenceNode {
			return s, lineErr(n, "steps: want a list of steps")
		}
		for _, sn := range n.Content {
			st, err := parseStep(sn)
			if err != nil {
				return s, err
			}
			s.Steps = append(s.Steps, st)
		}
	}
	return s, nil
}

func parseSale(n *yaml.Node) (SaleSpec, error) {
	m, err := mapping(n, "id", "holdTTL", "perUserLimit", "items", "room")
	if err != nil {
		return SaleSpec{}, err
	}
	sp := SaleSpec{ID: "gameday", HoldTTL: 3 * time.Second, PerUserLimit: 1}
	p := &parser{}
	p.str(m, "id", &sp.ID)
	p.dur(m, "holdTTL", &sp.HoldTTL)
	p.int(m, "perUserLimit", &sp.PerUserLimit, 1, 16)
	if p.err != nil {
		return sp, p.err
	}
	if rn := m.get("room"); rn != nil {
		rm, err := mapping(rn, "admissionRate", "maxActive", "powDifficulty")
		if err != nil {
			return sp, err
		}
		sp.Room = &RoomSpec{}
		p.rate(rm, "admissionRate", &sp.Room.AdmissionRate)
		p.int(rm, "maxActive", &sp.Room.MaxActive, 0, 1_000_000)
		p.int(rm, "powDifficulty", &sp.Room.PowDifficulty, 0, 24)
		if p.err != nil {
			return sp, p.err
		}
		if rm.get("admissionRate") == nil {
			return sp, lineErr(rn, "room: want admissionRate (buyers per second let through)")
		}
	}
	if sp.HoldTTL < time.Second {
		return sp, lineErr(m.get("holdTTL"), "holdTTL %s: at least 1s", sp.HoldTTL)
	}
	items := m.get("items")
	if items == nil || items.Kind != yaml.SequenceNode || len(items.Content) == 0 {
		return sp, lineErr(n, "sale: want items, a list of at least one {id, quantity}")
	}
	for _, in := range items.Content {
		im, err := mapping(in, "id", "quantity", "shards")
		if err != nil {
			return sp, err
		}
		it := ItemSpec{Shards: 1}
		var q int
		p.str(im, "id", &it.ID)
		p.int(im, "quantity", &q, 1, 10_000_000)
		p.int(im, "shards", &it.Shards, 1, 64)
		if p.err != nil {
			return sp, p.err
		}
		if it.ID == "" || im.get("quantity") == nil {
			return sp, lineErr(in, "item: want id and quantity")
		}
		it.Quantity = int64(q)
		sp.Items = append(sp.Items, it)
	}
	return sp, nil
}

func parseStep(n *yaml.Node) (Step, error) {
	if n.Kind != yaml.MappingNode {
		return Step{}, lineErr(n, "step: want a mapping with at and fault")
	}
	// The fault decides which other keys it takes, so the keys are checked in two passes.
	all := fieldsOf(n)
	fn := all.get("fault")
	if fn == nil {
		return Step{}, lineErr(n, "step: missing \"fault\" (one of %s)", strings.Join(FaultNames(), ", "))
	}
	kind, ok := faultKinds[fn.Value]
	if !ok {
		return Step{}, lineErr(fn, "unknown fault %q (want one of %s)", fn.Value, strings.Join(FaultNames(), ", "))
	}
	m, err := mapping(n, append([]string{"at", "jitter", "fault"}, kind.params...)...)
	if err != nil {
		return Step{}, err
	}
	st := Step{Line: n.Line}
	p := &parser{}
	p.dur(m, "at", &st.At)
	p.dur(m, "jitter", &st.Jitter)
	if p.err != nil {
		return st, p.err
	}
	if m.get("at") == nil {
		return st, lineErr(n, "step %s: missing \"at\" (when, after the release, e.g. 2s)", fn.Value)
	}
	if st.Fault, err = kind.parse(m, p); err != nil {
		return st, err
	}
	return st, p.err
}

// fields is a YAML mapping by key, keeping the nodes for their lines.
type fields struct {
	node *yaml.Node
	keys map[string]*yaml.Node
}

func (f fields) get(k string) *yaml.Node { return f.keys[k] }

func fieldsOf(n *yaml.Node) fields {
	f := fields{node: n, keys: map[string]*yaml.Node{}}
	for i := 0; i+1 < len(n.Content); i += 2 {
		f.keys[n.Content[i].Value] = n.Content[i+1]
	}
	return f
}

// mapping checks n is a mapping of only the allowed keys, each once.
func mapping(n *yaml.Node, allowed ...string) (fields, error) {
	if n.Kind != yaml.MappingNode {
		return fields{}, lineErr(n, "want a mapping of %s", strings.Join(allowed, ", "))
	}
	seen := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k := n.Content[i]
		if !slices.Contains(allowed, k.Value) {
			return fields{}, lineErr(k, "unknown key %q (want one of %s)", k.Value, strings.Join(allowed, ", "))
		}
		if seen[k.Value] {
			return fields{}, lineErr(k, "key %q given twice", k.Value)
		}
		seen[k.Value] = true
	}
	return fieldsOf(n), nil
}

// parser reads typed values, keeping the first error.
type parser struct{ err error }

func (p *parser) scalar(m fields, k string) *yaml.Node {
	n := m.get(k)
	if n == nil || p.err != nil {
		return nil
	}
	if n.Kind != yaml.ScalarNode {
		p.err = lineErr(n, "%s: want a single value", k)
		return nil
	}
	return n
}

// service reads a fault's required "service" key, one of allowed.
func (p *parser) service(m fields, dst *string, allowed ...string) error {
	n := p.scalar(m, "service")
	if n == nil {
		return lineErr(m.node, "say which service (%s)", strings.Join(allowed, " or "))
	}
	if !slices.Contains(allowed, n.Value) {
		return lineErr(n, "service %q: want %s", n.Value, strings.Join(allowed, " or "))
	}
	*dst = n.Value
	return nil
}

func (p *parser) str(m fields, k string, dst *string) {
	if n := p.scalar(m, k); n != nil {
		*dst = n.Value
	}
}

func (p *parser) int(m fields, k string, dst *int, lo, hi int) {
	n := p.scalar(m, k)
	if n == nil {
		return
	}
	v, err := strconv.Atoi(strings.ReplaceAll(n.Value, "_", ""))
	if err != nil {
		p.err = lineErr(n, "%s %q: want a whole number", k, n.Value)
		return
	}
	if v < lo || v > hi {
		p.err = lineErr(n, "%s %d: want %d..%d", k, v, lo, hi)
		return
	}
	*dst = v
}

func (p *parser) uint(m fields, k string, dst *uint64) {
	if n := p.scalar(m, k); n != nil {
		v, err := strconv.ParseUint(n.Value, 10, 64)
		if err != nil {
			p.err = lineErr(n, "%s %q: want a number >= 0", k, n.Value)
			return
		}
		*dst = v
	}
}

func (p *parser) dur(m fields, k string, dst *time.Duration) {
	if n := p.scalar(m, k); n != nil {
		v, err := time.ParseDuration(n.Value)
		if err != nil || v < 0 {
			p.err = lineErr(n, "%s %q: want a duration like 2s or 500ms", k, n.Value)
			return
		}
		*dst = v
	}
}

func (p *parser) share(m fields, k string, dst *float64) {
	if n := p.scalar(m, k); n != nil {
		v, err := strconv.ParseFloat(n.Value, 64)
		if err != nil || v < 0 || v > 1 {
			p.err = lineErr(n, "%s %q: want a share in 0..1", k, n.Value)
			return
		}
		*dst = v
	}
}

// rate reads "250/s" or a plain number of buyers per second.
func (p *parser) rate(m fields, k string, dst *float64) {
	if n := p.scalar(m, k); n != nil {
		v, err := strconv.ParseFloat(strings.TrimSuffix(n.Value, "/s"), 64)
		if err != nil || v <= 0 {
			p.err = lineErr(n, "%s %q: want buyers per second, e.g. 250/s", k, n.Value)
			return
		}
		*dst = v
	}
}

// yamlErrLine splits yaml.v3's syntax errors ("yaml: line 7: did not find ...") into line and message.
func yamlErrLine(msg string) (int, string) {
	_, rest, ok := strings.Cut(msg, "line ")
	if !ok {
		return 0, msg
	}
	end := strings.IndexFunc(rest, func(r rune) bool { return r < '0' || r > '9' })
	if end < 0 {
		end = len(rest)
	}
	n, _ := strconv.Atoi(rest[:end])
	return n, strings.TrimPrefix(rest[end:], ": ")
}
