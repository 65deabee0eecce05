package loadgen

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/fsctl/fsctl/outcome"
	"github.com/fsctl/fsctl/profile"
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

// LoadClassifier reads a classification file.
func LoadClassifier(path string) (*Classifier, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	c, err := ParseClassifier(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return c, nil
}

// ParseClassifier compiles a classification from YAML.
func ParseClassifier(b []byte) (*Classifier, error) {
	var cfg ClassifyConfig
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(&cfg); err != nil {
		return nil, fmt.Errorf("classification: %w", err)
	}
	c := &Classifier{orderField: splitPath(cfg.OrderIDField)}
	for i, r := range cfg.Rules {
		if named := Outcomes()[:9]; !slices.Contains(named, r.Outcome) {
			return nil, fmt.Errorf("rule %d: outcome %q is not one of %v", i+1, r.Outcome, named)
		}
		if r.Status == 0 && r.Field == "" && r.Match == "" {
			return nil, fmt.Errorf("rule %d: give at least one of status, field, match", i+1)
		}
		if r.Value != nil && r.Field == "" {
			return nil, fmt.Errorf("rule %d: value without field", i+1)
		}
		if r.Match != "" {
			re, err := regexp.Compile(r.Match)
			if err != nil {
				return nil, fmt.Errorf("rule %d: match: %w", i+1, err)
			}
			r.re = re
		}
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
	if c.needJSON || c.orderField != nil {
		_ = json.Unmarshal(body, &doc) // not JSON: field rules simply do not match
	}
	orderID := lookup(doc, c.orderField)
	for _, r := range c.rules {
		if r.Status != 0 && r.Status != status {
			continue
		}
		if r.Field != "" {
			v := lookup(doc, splitPath(r.Field))
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

// ClassifierFor compiles a target profile's classify section; a rule's problem names the
// section's line in the profile.
func ClassifierFor(p *profile.Profile) (*Classifier, error) {
	c, err := ParseClassifier(p.Classify.Raw)
	if err != nil {
		return nil, &profile.FieldError{Field: "classify", Line: p.Classify.Line, Err: err}
	}
	return c, nil
}
