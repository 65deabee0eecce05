package gameday

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/fsctl/fsctl/internal/platform/yamlfield"
)

// lineErr is a problem with a scenario file at node n's line that no one field holds.
func lineErr(n *yaml.Node, format string, args ...any) error {
	return &yamlfield.Error{Line: n.Line, Err: fmt.Errorf(format, args...)}
}

// LoadFile reads and parses a scenario file. A file that cannot be read is os.ReadFile's error;
// one that is read but wrong is a *yamlfield.Error naming the file and the line.
func LoadFile(path string) (Scenario, error) {
	return yamlfield.Load(path, Parse)
}

// Parse reads a scenario. Unknown keys, missing ones and values of the wrong kind are
// *yamlfield.Errors that name their line, in the words every fsctl file uses; defaults fill what
// may be left out.
func Parse(b []byte) (Scenario, error) { return parse(b, false) }

// ParseDrill reads the scenario of a drill against a team's own system (fsctl gameday drill -f)
// -f): the buyers, their schedule, the budget and the steps, in the game day's format,
// but no sale (the target's is named on the command line), no instances and no payments of
// fsctl's, and only steps that act on the team's system (exec, http, and toxic on a proxy of
// their Toxiproxy). Each mistake names its line.
func ParseDrill(b []byte) (Scenario, error) { return parse(b, true) }

// LoadDrillFile reads a drill's scenario file (ParseDrill), the file named in its errors.
func LoadDrillFile(path string) (Scenario, error) { return yamlfield.Load(path, ParseDrill) }

// drillSteps are the steps a drill takes: those that act on the team's own system.
var drillSteps = []string{"exec", "http", "toxic"}

func parse(b []byte, drill bool) (Scenario, error) {
	doc, err := yamlfield.Parse(b)
	if err != nil {
		return Scenario{}, err
	}
	if yamlfield.Empty(doc) {
		return Scenario{}, &yamlfield.Error{Line: 1, Err: errors.New("empty scenario")}
	}
	root, err := mapping(doc.Content[0], "", "name", "seed", "sale", "servers", "buyers", "rate", "ramp",
		"pay", "cancel", "retries", "retryAfter", "replays", "settle", "budget", "steps")
	if err != nil {
		return Scenario{}, err
	}
	s := Scenario{Name: "unnamed", Servers: 2, Retries: 3, Settle: 60 * time.Second}
	if err := parseTop(root, &s); err != nil {
		return s, err
	}
	if err := parseBudget(root, &s); err != nil {
		return s, err
	}
	if err := checkRequired(root, drill); err != nil {
		return s, err
	}
	if s.Pay+s.Cancel > 1 {
		return s, lineErr(root.get("pay"), "pay %g + cancel %g is more than 1", s.Pay, s.Cancel)
	}
	if !drill {
		if s.Sale, err = parseSale(root.get("sale")); err != nil {
			return s, err
		}
	}
	if err := parseSteps(root, &s, drill); err != nil {
		return s, err
	}
	return s, nil
}

// parseTop reads the scenario's scalar keys into s.
func parseTop(root fields, s *Scenario) error {
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
	p.dur(root, "retryAfter", &s.RetryAfter)
	p.int(root, "replays", &s.Replays, 0, 5)
	p.dur(root, "settle", &s.Settle)
	return p.err
}

// parseBudget reads the budget, when the scenario has one, into s.
func parseBudget(root fields, s *Scenario) error {
	n := root.get("budget")
	if n == nil {
		return nil
	}
	bm, err := mapping(n, "budget", "undecided", "outage")
	if err != nil {
		return err
	}
	s.Budget = &Budget{Undecided: -1, Outage: -1}
	p := &parser{}
	p.share(bm, "undecided", &s.Budget.Undecided)
	p.dur(bm, "outage", &s.Budget.Outage)
	if p.err != nil {
		return p.err
	}
	if s.Budget.Undecided < 0 && s.Budget.Outage < 0 {
		return lineErr(n, "budget: say undecided (a share of buyers) or outage (a duration), or both")
	}
	return nil
}

// checkRequired refuses a scenario without a key it needs, or a drill with one it cannot have.
func checkRequired(root fields, drill bool) error {
	required := []string{"sale", "buyers", "rate"}
	if drill {
		required = required[1:]
		for _, k := range []string{"sale", "servers", "pay", "cancel"} {
			if n := root.get(k); n != nil {
				return yamlfield.At(n, k, errors.New("not in a drill: it buys the running target's sale (--sale) through its profile, with no instances or payments of fsctl's"))
			}
		}
	}
	for _, k := range required {
		if root.get(k) == nil {
			return lineErr(root.node, "missing %q", k)
		}
	}
	return nil
}

// parseSteps reads the steps, when the scenario has any, into s; a drill's must be drill steps.
func parseSteps(root fields, s *Scenario, drill bool) error {
	n := root.get("steps")
	if n == nil {
		return nil
	}
	if n.Kind != yaml.SequenceNode {
		return lineErr(n, "steps: want a list of steps")
	}
	for i, sn := range n.Content {
		st, err := parseStep(sn, fmt.Sprintf("steps[%d]", i))
		if err != nil {
			return err
		}
		if drill {
			if err := drillStep(st, sn); err != nil {
				return err
			}
		}
		s.Steps = append(s.Steps, st)
	}
	return nil
}

func parseSale(n *yaml.Node) (SaleSpec, error) {
	m, err := mapping(n, "sale", "id", "holdTTL", "perUserLimit", "items", "room")
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
		rm, err := mapping(rn, "sale.room", "admissionRate", "maxActive", "powDifficulty")
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
	for i, in := range items.Content {
		im, err := mapping(in, fmt.Sprintf("sale.items[%d]", i), "id", "quantity", "shards")
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

func parseStep(n *yaml.Node, path string) (Step, error) {
	if n.Kind != yaml.MappingNode {
		return Step{}, lineErr(n, "step: want a mapping with at and fault")
	}
	// The fault decides which other keys it takes, so the keys are checked in two passes.
	all := fieldsOf(n, path)
	fn := all.get("fault")
	if fn == nil {
		return Step{}, lineErr(n, "step: missing \"fault\" (one of %s)", strings.Join(FaultNames(), ", "))
	}
	kind, ok := faultKinds[fn.Value]
	if !ok {
		hint := ""
		if near := yamlfield.Suggest(fn.Value, FaultNames()); near != "" {
			hint = "did you mean " + near + "? "
		}
		return Step{}, lineErr(fn, "unknown fault %q (%swant one of %s)", fn.Value, hint, strings.Join(FaultNames(), ", "))
	}
	m, err := mapping(n, path, append([]string{"at", "jitter", "fault"}, kind.params...)...)
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

// fields is a YAML mapping by key, keeping the nodes for their lines and its path for messages.
type fields struct {
	node *yaml.Node
	path string
	keys map[string]*yaml.Node
}

func (f fields) get(k string) *yaml.Node { return f.keys[k] }

// field is key k's path in the file, as messages name it.
func (f fields) field(k string) string {
	if f.path == "" {
		return k
	}
	return f.path + "." + k
}

func fieldsOf(n *yaml.Node, path string) fields {
	f := fields{node: n, path: path, keys: map[string]*yaml.Node{}}
	for i := 0; i+1 < len(n.Content); i += 2 {
		f.keys[n.Content[i].Value] = n.Content[i+1]
	}
	return f
}

// mapping checks n is a mapping, at path, of only the allowed keys, each once.
func mapping(n *yaml.Node, path string, allowed ...string) (fields, error) {
	if err := yamlfield.CheckKeys(n, path, allowed); err != nil {
		return fields{}, err
	}
	return fieldsOf(n, path), nil
}

// parser reads typed values, keeping the first error; a value of the wrong kind is said as
// every fsctl file says it (yamlfield's words), a value out of range names the range.
type parser struct{ err error }

// fail keeps the first error: err about key k of m, at node n.
func (p *parser) fail(m fields, k string, n *yaml.Node, err error) {
	if p.err == nil {
		p.err = yamlfield.At(n, m.field(k), err)
	}
}

func (p *parser) scalar(m fields, k string) *yaml.Node {
	n := m.get(k)
	if n == nil || p.err != nil {
		return nil
	}
	if n.Kind != yaml.ScalarNode {
		p.fail(m, k, n, errors.New("want a single value, not a list or a mapping"))
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
	v, err := yamlfield.Int(n)
	switch {
	case err != nil:
		p.fail(m, k, n, err)
	case v < int64(lo) || v > int64(hi):
		p.fail(m, k, n, fmt.Errorf("want %d..%d, not %d", lo, hi, v))
	default:
		*dst = int(v)
	}
}

// mapOf reads key k's mapping, each value by one(sub, name) (p.int, p.str, ...) so that a
// mistake names its key; want says what the mapping holds. It reports whether there was one.
func (p *parser) mapOf(m fields, k, want string, one func(sub fields, name string)) bool {
	n := m.get(k)
	if n == nil || p.err != nil {
		return false
	}
	if n.Kind != yaml.MappingNode {
		p.fail(m, k, n, errors.New("want a mapping of "+want))
		return false
	}
	sub := fieldsOf(n, m.field(k))
	for i := 0; i+1 < len(n.Content); i += 2 {
		one(sub, n.Content[i].Value)
	}
	return true
}

// ints reads key k's mapping of names to whole numbers (a toxic's attributes), each checked as
// int does, from 0 up.
func (p *parser) ints(m fields, k string, dst *map[string]int) {
	out := map[string]int{}
	if p.mapOf(m, k, "names to whole numbers, like {latency: 200, jitter: 50}", func(sub fields, name string) {
		var v int
		p.int(sub, name, &v, 0, 1<<31-1)
		out[name] = v
	}) {
		*dst = out
	}
}

func (p *parser) uint(m fields, k string, dst *uint64) {
	if n := p.scalar(m, k); n != nil {
		v, err := yamlfield.Uint(n)
		if err != nil {
			p.fail(m, k, n, err)
			return
		}
		*dst = v
	}
}

func (p *parser) bool(m fields, k string, dst *bool) {
	if n := p.scalar(m, k); n != nil {
		v, err := yamlfield.Bool(n)
		if err != nil {
			p.fail(m, k, n, err)
			return
		}
		*dst = v
	}
}

func (p *parser) dur(m fields, k string, dst *time.Duration) {
	if n := p.scalar(m, k); n != nil {
		v, err := yamlfield.Duration(n)
		switch {
		case err != nil:
			p.fail(m, k, n, err)
		case v < 0:
			p.fail(m, k, n, fmt.Errorf("%s: must not be negative", v))
		default:
			*dst = v
		}
	}
}

func (p *parser) share(m fields, k string, dst *float64) {
	if n := p.scalar(m, k); n != nil {
		v, err := yamlfield.Float(n)
		if err != nil || v < 0 || v > 1 {
			p.fail(m, k, n, fmt.Errorf("%q is not a share: write it between 0 and 1, like 0.25", n.Value))
			return
		}
		*dst = v
	}
}

// rate reads "250/s", "600/m" or a plain number of buyers per second.
func (p *parser) rate(m fields, k string, dst *float64) {
	if n := p.scalar(m, k); n != nil {
		v, err := yamlfield.Rate(n)
		switch {
		case err != nil:
			p.fail(m, k, n, err)
		case v == 0:
			p.fail(m, k, n, fmt.Errorf("%s: want more than 0 buyers per second", n.Value))
		default:
			*dst = v
		}
	}
}

// drillStep refuses, in a drill, a step that acts on the local stack's processes or proxies.
func drillStep(st Step, n *yaml.Node) error {
	name := st.Fault.Name()
	if !slices.Contains(drillSteps, name) {
		return lineErr(n, "%s acts on the local stack fsctl started; a drill against your own system takes %s steps", name, strings.Join(drillSteps, ", "))
	}
	if nf, ok := st.Fault.(netFault); ok && nf.Proxy == "" {
		return lineErr(n, "toxic: name the proxy of your Toxiproxy it goes on (proxy: NAME, with --toxiproxy URL); service names the local game day's own")
	}
	return nil
}
