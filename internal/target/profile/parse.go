package profile

import (
	"cmp"
	"errors"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/fsctl/fsctl/internal/platform/yamlfield"
	"github.com/fsctl/fsctl/profiles"
)

// FieldError is a profile that fails validation at one field, with its line.
type FieldError = yamlfield.Error

// Default returns the bundled server's profile (profiles/fsctl.yaml).
func Default() *Profile {
	b, err := profiles.Files.ReadFile(profiles.Bundled)
	if err != nil {
		panic("profile: " + err.Error()) // a build defect, caught by the tests
	}
	p, err := Parse(b, "built-in "+profiles.Bundled, "")
	if err != nil {
		panic("profile: bundled " + profiles.Bundled + ": " + err.Error())
	}
	return p
}

// Load reads a profile file; an empty path is the bundled server's profile. A file that cannot
// be read is os.ReadFile's error; one that is read but wrong is a *FieldError naming the file.
func Load(path string) (*Profile, error) {
	if path == "" {
		return Default(), nil
	}
	return yamlfield.Load(path, func(b []byte) (*Profile, error) { return Parse(b, path, filepath.Dir(path)) })
}

// Parse reads and validates a profile. Relative file names in it are relative to dir. Every
// mistake is a *FieldError naming its line: a syntax error, an unknown key (with the known ones),
// a value of the wrong kind, a value that does not validate.
func Parse(b []byte, source, dir string) (*Profile, error) {
	p := &Profile{dir: dir, source: source}
	doc, err := yamlfield.Decode(b, p)
	if err != nil {
		return nil, err
	}
	if yamlfield.Empty(doc) {
		return nil, yamlfield.Errorf("", "the file is empty: give at least name, purchase, token, classify, redis and sql")
	}
	if err := p.validate(); err != nil {
		var fe *FieldError
		if errors.As(err, &fe) && fe.Line == 0 {
			fe.Line = yamlfield.Line(doc, fe.Field)
		}
		return nil, err
	}
	return p, nil
}

var methods = []string{"GET", "POST", "PUT", "PATCH", "DELETE"}

func (p *Profile) validate() error {
	p.Purchase.Method = strings.ToUpper(cmp.Or(p.Purchase.Method, "POST"))
	p.Token.Type = strings.ToLower(p.Token.Type)
	if len(p.SQL.LiveStatuses) == 0 {
		p.SQL.LiveStatuses = []string{"PENDING", "PAID"}
	}
	for _, check := range []func() error{p.validateHead, p.validatePurchase, p.validateToken, p.validateRedis, p.validateSQL, p.validateFix, p.validateKafka} {
		if err := check(); err != nil {
			return err
		}
	}
	return nil
}

func (p *Profile) validateHead() error {
	switch {
	case p.Name == "":
		return yamlfield.Errorf("name", "missing: name the target (it labels every report)")
	case p.Deep != "" && p.Deep != Deep:
		return yamlfield.Errorf("deep", "%q: the only deep target is %q (fsctl serve); leave it out for any other", p.Deep, Deep)
	case p.Classify.Empty():
		return yamlfield.Errorf("classify", "missing: give the rules that map the target's answers to outcomes (see examples/classify.yaml)")
	case p.Limits.PerUser < 0:
		return yamlfield.Errorf("limits.perUser", "%d: must be at least 1", p.Limits.PerUser)
	}
	h := p.HTTP
	type path struct {
		tmpl string
		vars []string
	}
	paths := map[string]path{"health": {h.Health, pageVars}, "metrics": {h.Metrics, pageVars}, "admin": {h.Admin, pageVars},
		"salePage": {h.SalePage, pageVars}, "room": {h.Room, pageVars}, "order": {h.Order, orderVars}, "pay": {h.Pay, orderVars},
		"purchasePath": {h.PurchasePath, itemVars}}
	for _, name := range sortedKeys(paths) {
		path := paths[name]
		if path.tmpl != "" && !strings.HasPrefix(path.tmpl, "/") {
			return yamlfield.Errorf("http."+name, "%q: want a path starting with /", path.tmpl)
		}
		if err := checkTemplate(path.tmpl, path.vars); err != nil {
			return &FieldError{Field: "http." + name, Err: err}
		}
	}
	return nil
}

func (p *Profile) validatePurchase() error {
	pu := p.Purchase
	switch {
	case pu.URL == "":
		return yamlfield.Errorf("purchase.url", "missing: the purchase path, e.g. /api/items/${item}/purchase")
	case !slices.Contains(methods, pu.Method):
		return yamlfield.Errorf("purchase.method", "%q: want one of %s", pu.Method, strings.Join(methods, ", "))
	case !strings.HasPrefix(pu.URL, "/") && !strings.HasPrefix(pu.URL, "http://") && !strings.HasPrefix(pu.URL, "https://"):
		return yamlfield.Errorf("purchase.url", "%q: want a path under the target (/...) or an http(s):// URL", pu.URL)
	}
	fields := map[string]string{"purchase.url": pu.URL, "purchase.body": pu.Body}
	for name, v := range pu.Headers {
		fields["purchase.headers."+name] = v
	}
	for _, field := range sortedKeys(fields) {
		if err := checkTemplate(fields[field], requestVars); err != nil {
			return &FieldError{Field: field, Err: err}
		}
		if p.Token.Type == TokenNone && strings.Contains(fields[field], "${token}") {
			return yamlfield.Errorf(field, "uses ${token} but token.type is none")
		}
	}
	return nil
}

func (p *Profile) validateToken() error {
	t := p.Token
	if t.KeyEnv != "" && (t.Type == TokenFile || t.Type == TokenNone) {
		return yamlfield.Errorf("token.keyEnv", "a %s token is not signed: keyEnv goes with hs256 or rs256", t.Type)
	}
	switch t.Type {
	case TokenHS256:
		if t.Secret == "" && t.SecretEnv == "" {
			return yamlfield.Errorf("token.secretEnv", "missing: hs256 needs secretEnv (the variable holding the secret) or secret")
		}
	case TokenRS256:
		if t.KeyFile == "" {
			return yamlfield.Errorf("token.keyFile", "missing: rs256 needs the PEM private key that signs the buyers' tokens")
		}
	case TokenFile:
		if t.File == "" {
			return yamlfield.Errorf("token.file", "missing: the file of \"user token\" lines")
		}
		return nil
	case TokenNone:
		return nil
	case "":
		return yamlfield.Errorf("token.type", "missing: want hs256, rs256, file or none")
	default:
		return yamlfield.Errorf("token.type", "%q: want hs256, rs256, file or none", t.Type)
	}
	if t.TTL < 0 {
		return yamlfield.Errorf("token.ttl", "%s: must be positive", t.TTL)
	}
	if t.KeyEnv == "" && (t.IssuerEnv != "" || t.AudienceEnv != "") {
		return yamlfield.Errorf("token.keyEnv", "missing: issuerEnv and audienceEnv are the claims of keyEnv's tokens")
	}
	for _, name := range sortedKeys(t.Claims) {
		s, ok := t.Claims[name].(string)
		if !ok {
			continue
		}
		if err := checkTemplate(s, claimVars); err != nil {
			return &FieldError{Field: "token.claims." + name, Err: err}
		}
	}
	return nil
}

func (p *Profile) validateRedis() error {
	r := p.Redis
	if r.Stock == "" {
		return yamlfield.Errorf("redis.stock", "missing: the key of an item's stock counter, e.g. \"{item:${item}}:stock\"")
	}
	for _, f := range []struct{ name, tmpl string }{{"tag", r.Tag}, {"shardTag", r.ShardTag}} {
		if err := checkTemplate(f.tmpl, tagVars); err != nil {
			return &FieldError{Field: "redis." + f.name, Err: err}
		}
	}
	if r.ShardTag != "" && !strings.Contains(r.ShardTag, "${shard}") {
		return yamlfield.Errorf("redis.shardTag", "%q: must use ${shard}, or every shard would share one key", r.ShardTag)
	}
	if r.Spread && (r.ShardTag == "" || !strings.Contains(r.Tag, "{") || !strings.Contains(r.ShardTag, "{")) {
		return yamlfield.Errorf("redis.spread", "needs redis.tag and redis.shardTag, each with a {hash tag} to salt")
	}
	if r.ShardTag != "" && p.SQL.Shards == "" {
		return yamlfield.Errorf("sql.shards", "missing: redis.shardTag needs the query of an item's shard count")
	}
	for _, f := range []struct{ name, tmpl string }{{"stock", r.Stock}, {"buyers", r.Buyers}, {"holds", r.Holds}} {
		if err := checkTemplate(f.tmpl, keyVars); err != nil {
			return &FieldError{Field: "redis." + f.name, Err: err}
		}
		if strings.Contains(f.tmpl, "${tag}") && r.Tag == "" {
			return yamlfield.Errorf("redis."+f.name, "uses ${tag} but redis.tag is not given")
		}
	}
	return nil
}

// namedParam finds pgx's named parameters (@item) in a query.
var namedParam = regexp.MustCompile(`@([A-Za-z_][A-Za-z0-9_]*)`)

func checkQuery(field, q string, allowed []string, need string) error {
	if q == "" {
		return nil
	}
	for _, m := range namedParam.FindAllStringSubmatch(q, -1) {
		if !slices.Contains(allowed, m[1]) {
			return yamlfield.Errorf(field, "unknown parameter @%s: this query may use @%s", m[1], strings.Join(allowed, ", @"))
		}
	}
	if need != "" && !strings.Contains(q, "@"+need) {
		return yamlfield.Errorf(field, "does not use @%s: it must return one %s's rows", need, need)
	}
	return nil
}

func (p *Profile) validateSQL() error {
	s := p.SQL
	required := []struct{ field, q, need string }{
		{"sql.items", s.Items, ""}, {"sql.item", s.Item, "item"}, {"sql.live", s.Live, "item"}, {"sql.userOrders", s.UserOrders, "user"},
	}
	for _, r := range required {
		if r.q == "" {
			return yamlfield.Errorf(r.field, "missing: %s", queryPurpose[strings.TrimPrefix(r.field, "sql.")])
		}
	}
	queries := append(slices.Clip(required), []struct{ field, q, need string }{
		{"sql.shards", s.Shards, "item"}, {"sql.perUserLimit", s.PerUserLimit, ""}, {"sql.paid", s.Paid, "item"},
		{"sql.liveBuyers", s.LiveBuyers, "item"}, {"sql.itemOrders", s.ItemOrders, "item"},
	}...)
	for _, r := range queries {
		allowed := []string{"sale", "item"}
		switch r.field {
		case "sql.items", "sql.perUserLimit":
			allowed = []string{"sale"}
		case "sql.userOrders":
			allowed = []string{"sale", "item", "user"}
		}
		if err := checkQuery(r.field, r.q, allowed, r.need); err != nil {
			return err
		}
	}
	return nil
}

func (p *Profile) validateFix() error {
	f := p.Fix
	if err := checkQuery("fix.sold", f.Sold, []string{"sale", "item"}, ""); err != nil {
		return err
	}
	for _, v := range []struct{ field, value string }{{"fix.stock", f.Stock}, {"fix.buyers", f.Buyers}} {
		if v.value != "" && v.value != Recount {
			return yamlfield.Errorf(v.field, "%q: the only fix is %q; leave it out to never touch it", v.value, Recount)
		}
	}
	switch {
	case f.Buyers == Recount && (p.Redis.Buyers == "" || p.SQL.LiveBuyers == ""):
		return yamlfield.Errorf("fix.buyers", "recount needs redis.buyers and sql.liveBuyers")
	case (f.Stock != "" || f.Buyers != "") && p.Bundled():
		return yamlfield.Errorf("fix", "a deep target's stock and buyers are repaired by reconcile's own passes: leave fix.stock and fix.buyers unset")
	}
	return nil
}

// queryPurpose says what each query is for, in messages.
var queryPurpose = map[string]string{
	"items":        "the query of the sale's item ids (one column)",
	"item":         "the query of one item's quantity and sold (columns quantity, sold; @item)",
	"shards":       "the query of an item's number of stock shards (@item)",
	"perUserLimit": "the query of the sale's per-user limit",
	"live":         "the query of how many live orders an item has (@item)",
	"paid":         "the query of how many paid orders an item has (@item)",
	"userOrders":   "the query of a user's orders of an item (columns id, status; @item, @user)",
	"liveBuyers":   "the query of the users with live orders of an item (@item)",
	"itemOrders":   "the query of every order of an item (columns user_id, id, status; @item)",
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
