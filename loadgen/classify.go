package loadgen

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/fsctl/fsctl/internal/contract/outcome"
	"github.com/fsctl/fsctl/internal/platform/plainjson"
	"github.com/fsctl/fsctl/internal/platform/yamlfield"
	"github.com/fsctl/fsctl/internal/target/profile"
)

// Outcomes a buyer can end with besides the server's own codes: the rules' fallbacks for an
// answer they do not name, and what the client saw when no answer came.
const (
	ClientError    outcome.Code = "CLIENT_ERROR"
	ServerError    outcome.Code = "SERVER_ERROR"
	Timeout        outcome.Code = "TIMEOUT"
	TransportError outcome.Code = "TRANSPORT_ERROR"
)

// Outcomes returns every outcome a burst is classified into, in report order; the first nine are the
// ones a rule may name, the last two come from the client.
func Outcomes() []outcome.Code {
	return []outcome.Code{
		outcome.Reserved, outcome.SoldOut, outcome.AlreadyPurchased, outcome.NotAdmitted, outcome.RateLimited,
		outcome.NotStarted, outcome.Paused, ClientError, ServerError, Timeout, TransportError,
	}
}

// Retryable reports whether a click is retried with the same key after this outcome: the
// answer never came or the server failed.
func Retryable(c outcome.Code) bool {
	return c == Timeout || c == TransportError || c == ServerError
}

// Rule maps answers to an outcome; every condition given must hold.
type Rule struct {
	Status  int          `yaml:"status"`
	Field   string       `yaml:"field"`
	Value   *string      `yaml:"value"`
	Match   string       `yaml:"match"`
	Outcome outcome.Code `yaml:"outcome"`
	re      *regexp.Regexp
	path    []string // Field split once, not for every answer
}

// ClassifyConfig is the YAML form of a classifier.
type ClassifyConfig struct {
	OrderIDField string `yaml:"orderIdField"`
	Rules        []Rule `yaml:"rules"`
}

// Classifier maps a purchase answer (status and body) to an outcome and an order id.
type Classifier struct {
	orderField []string
	rules      []Rule
	needJSON   bool
}

// LoadClassifier reads a classification file. A file that cannot be read is os.ReadFile's
// error; one that is read but wrong is a *yamlfield.Error naming the file, line and field.
func LoadClassifier(path string) (*Classifier, error) {
	return yamlfield.Load(path, ParseClassifier)
}

// ParseClassifier compiles a classification from YAML; a mistake is a *yamlfield.Error at its line.
func ParseClassifier(b []byte) (*Classifier, error) {
	doc, err := yamlfield.Parse(b)
	if err != nil {
		return nil, err
	}
	if yamlfield.Empty(doc) {
		return nil, yamlfield.Errorf("", "the file is empty: give rules (see examples/classify.yaml)")
	}
	return compile(doc.Content[0], "")
}

// compile reads the classification at n, a document or a profile's classify section whose
// fields are named below path.
func compile(n *yaml.Node, path string) (*Classifier, error) {
	var cfg ClassifyConfig
	if err := yamlfield.DecodeNode(n, path, &cfg); err != nil {
		return nil, err
	}
	fail := func(field, format string, args ...any) error {
		fe := yamlfield.Errorf(field, format, args...)
		fe.Line = yamlfield.Line(n, field)
		if path != "" {
			fe.Field = path + "." + field
		}
		return fe
	}
	c := &Classifier{orderField: splitPath(cfg.OrderIDField)}
	for i, r := range cfg.Rules {
		rule := fmt.Sprintf("rules[%d]", i)
		if named := Outcomes()[:9]; !slices.Contains(named, r.Outcome) {
			return nil, fail(rule+".outcome", "%q is not one of %v", r.Outcome, named)
		}
		if r.Status == 0 && r.Field == "" && r.Match == "" {
			return nil, fail(rule, "give at least one of status, field, match")
		}
		if r.Value != nil && r.Field == "" {
			return nil, fail(rule+".value", "value without field")
		}
		if r.Match != "" {
			re, err := regexp.Compile(r.Match)
			if err != nil {
				return nil, fail(rule+".match", "%v", err)
			}
			r.re = re
		}
		r.path = splitPath(r.Field)
		c.needJSON = c.needJSON || r.Field != ""
		c.rules = append(c.rules, r)
	}
	return c, nil
}

func splitPath(p string) []string {
	if p == "" {
		return nil
	}
	return strings.Split(p, ".")
}

// Classify returns the outcome of an answer and the order id it carries, if any.
func (c *Classifier) Classify(status int, body []byte) (outcome.Code, string) {
	var doc any
	// Not JSON (an empty body is not either): field rules simply do not match.
	if (c.needJSON || c.orderField != nil) && len(body) > 0 {
		if flat, ok := decodeFlat(body); ok {
			doc = flat
		} else {
			_ = json.Unmarshal(body, &doc)
		}
	}
	orderID := lookup(doc, c.orderField)
	for _, r := range c.rules {
		if r.Status != 0 && r.Status != status {
			continue
		}
		if r.Field != "" {
			v := lookup(doc, r.path)
			if r.Value == nil && v == "" || r.Value != nil && v != *r.Value {
				continue
			}
		}
		if r.re != nil && !r.re.Match(body) {
			continue
		}
		return r.Outcome, orderID
	}
	if status >= 400 && status < 500 {
		return ClientError, orderID
	}
	return ServerError, orderID
}

// decodeFlat decodes body when it is one JSON object of plain strings, keys and values printable
// ASCII with no quote or backslash, as most answers of a checkout are ({"orderId":"…","status":
// "PENDING",…}): into what json.Unmarshal gives for it, without its two passes over the bytes
// (json.Unmarshal was 5.5% of blast's CPU in a 10,000-unit burst, decoding the answers the
// connection's memo had not kept, among them every RESERVED answer, each with its own order id).
// False: anything else, which json.Unmarshal decodes; FuzzDecodeFlatAgrees holds the two to the
// same documents.
func decodeFlat(body []byte) (map[string]any, bool) {
	i := plainjson.SkipSpace(body, 0)
	if i == len(body) || body[i] != '{' {
		return nil, false
	}
	doc := map[string]any{}
	if i = plainjson.SkipSpace(body, i+1); i < len(body) && body[i] == '}' {
		return doc, plainjson.SkipSpace(body, i+1) == len(body)
	}
	for {
		k, j, ok := plainjson.String(body, i)
		if !ok {
			return nil, false
		}
		if j = plainjson.SkipSpace(body, j); j == len(body) || body[j] != ':' {
			return nil, false
		}
		v, j, ok := plainjson.String(body, plainjson.SkipSpace(body, j+1))
		if !ok {
			return nil, false
		}
		doc[string(k)] = string(v)
		switch i = plainjson.SkipSpace(body, j); {
		case i == len(body):
			return nil, false
		case body[i] == '}':
			return doc, plainjson.SkipSpace(body, i+1) == len(body)
		case body[i] != ',':
			return nil, false
		}
		i = plainjson.SkipSpace(body, i+1)
	}
}

// lookup follows path through decoded JSON objects and returns a scalar as text ("" if absent).
func lookup(doc any, path []string) string {
	if path == nil {
		return ""
	}
	for _, k := range path {
		m, ok := doc.(map[string]any)
		if !ok {
			return ""
		}
		doc = m[k]
	}
	switch v := doc.(type) {
	case string:
		return v
	case float64:
		return strconv.FormatFloat(v, 'f', -1, 64)
	case bool:
		return strconv.FormatBool(v)
	}
	return ""
}

// ClassifierFor compiles a target profile's classify section; a rule's problem names its line
// in the profile's file and its field below classify.
func ClassifierFor(p *profile.Profile) (*Classifier, error) {
	if p.Classify.Empty() {
		return nil, &profile.FieldError{File: p.Source(), Field: "classify", Err: errors.New("missing: give the rules that map the target's answers to outcomes")}
	}
	c, err := compile(p.Classify.Node, "classify")
	if fe, ok := err.(*yamlfield.Error); ok && fe.File == "" {
		fe.File = p.Source()
	}
	return c, err
}
