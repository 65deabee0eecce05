package yamlfield

import (
	"encoding"
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// Tag is the struct tag that says what a number means to the file's author: `yamlfield:"rate"`
// on a float64 takes 250/s and 600/m as well as 250.
const Tag = "yamlfield"

// Parse reads one YAML document into its node tree. A syntax error is an *Error at its line.
// A document of nothing (or only comments) is a DocumentNode without content: see Empty.
func Parse(b []byte) (*yaml.Node, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(b, &doc); err != nil {
		return nil, explain(err, "")
	}
	return &doc, nil
}

// Empty reports whether a parsed document holds nothing.
func Empty(doc *yaml.Node) bool {
	return doc.Kind == 0 || doc.Kind == yaml.DocumentNode && len(doc.Content) == 0
}

// Decode reads b into v, a pointer to a struct whose fields carry yaml tags, strictly: a key the
// struct does not have, a key given twice, or a value of the wrong kind is an *Error naming its
// line and field. It returns the document, to place later validation errors with Line. An empty
// document leaves v as it is.
func Decode(b []byte, v any) (*yaml.Node, error) {
	doc, err := Parse(b)
	if err != nil {
		return nil, err
	}
	return doc, DecodeNode(doc, "", v)
}

// DecodeNode is Decode of a node already parsed: a document, or a part of one (a profile's
// classify section), whose fields are named below path.
func DecodeNode(n *yaml.Node, path string, v any) error {
	if Empty(n) {
		return nil
	}
	if n.Kind == yaml.DocumentNode {
		n = n.Content[0]
	}
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Pointer || rv.IsNil() {
		panic("yamlfield: Decode needs a non-nil pointer") // the caller's defect, not the file's
	}
	w := walker{done: map[visit]bool{}}
	if err := w.walk(n, rv.Type().Elem(), path, ""); err != nil {
		return err
	}
	// Every key and value was checked above; what yaml.v3 still refuses (a case the walk does not
	// know) is put in the same words.
	if err := n.Decode(v); err != nil {
		return explain(err, path)
	}
	return nil
}

var (
	durationType  = reflect.TypeFor[time.Duration]()
	timeType      = reflect.TypeFor[time.Time]()
	unmarshaler   = reflect.TypeFor[yaml.Unmarshaler]()
	textUnmarshal = reflect.TypeFor[encoding.TextUnmarshaler]()
)

// walker checks a node tree against a Go type before yaml.v3 decodes it, so every refusal is
// said in the file's terms.
type walker struct {
	// done holds the (node, type) pairs checked: an alias's anchor is checked once however many
	// times it is used, so a "billion laughs" document costs no more than its size.
	done map[visit]bool
	// merged counts the keys merge keys (<<) brought in, to bound them the same way.
	merged int
}

type visit struct {
	n *yaml.Node
	t reflect.Type
}

// maxMerged bounds the keys merges may bring in; no real file comes near it.
const maxMerged = 10_000

func (w *walker) walk(n *yaml.Node, t reflect.Type, path, unit string) error {
	if n.Kind == yaml.AliasNode {
		if n.Alias == nil {
			return nil
		}
		n = n.Alias
	}
	if w.done[visit{n, t}] {
		return nil
	}
	w.done[visit{n, t}] = true
	if n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null" {
		return nil // left out: the zero value
	}
	if reflect.PointerTo(t).Implements(unmarshaler) || t.Implements(unmarshaler) {
		return nil // reads itself
	}
	switch {
	case t == durationType, t == timeType:
		return w.leaf(n, t, path, unit)
	case t.Kind() == reflect.Struct && reflect.PointerTo(t).Implements(textUnmarshal):
		return w.leaf(n, t, path, unit)
	}
	switch t.Kind() {
	case reflect.Pointer:
		return w.walk(n, t.Elem(), path, unit)
	case reflect.Interface:
		return w.anything(n, t, path)
	case reflect.Struct:
		return w.structure(n, t, path)
	case reflect.Map:
		return w.mapping(n, t, path)
	case reflect.Slice, reflect.Array:
		if t.Elem().Kind() == reflect.Uint8 {
			return w.leaf(n, t, path, unit) // bytes: !!binary or a string
		}
		return w.sequence(n, t, path, unit)
	}
	return w.leaf(n, t, path, unit)
}

// pair is one key of a mapping with its value; merged when a merge key (<<) brought it in.
type pair struct {
	key, value *yaml.Node
	merged     bool
}

// pairs lists the keys of mapping n, with those merge keys bring in after its own (its own win).
func (w *walker) pairs(n *yaml.Node, merged bool, depth int) ([]pair, error) {
	var own, more []pair
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if k.Kind == yaml.ScalarNode && k.ShortTag() == "!!merge" {
			sources := []*yaml.Node{v}
			if v.Kind == yaml.SequenceNode {
				sources = v.Content
			}
			for _, src := range sources {
				if src.Kind == yaml.AliasNode && src.Alias != nil {
					src = src.Alias
				}
				if src.Kind != yaml.MappingNode || depth > 16 {
					return nil, At(k, "", errors.New("a merge (<<) takes a mapping or a list of mappings"))
				}
				ps, err := w.pairs(src, true, depth+1)
				if err != nil {
					return nil, err
				}
				if w.merged += len(ps); w.merged > maxMerged {
					return nil, At(k, "", errors.New("merges (<<) bring in too many keys"))
				}
				more = append(more, ps...)
			}
			continue
		}
		own = append(own, pair{key: k, value: v, merged: merged})
	}
	return append(own, more...), nil
}

// field is a key a struct takes: its Go type and what its number means (Tag).
type field struct {
	t    reflect.Type
	unit string
}

// fieldsOf lists the keys a struct type takes, in declaration order, as yaml.v3 names them:
// the yaml tag's name, else the field's name in lower case; inline structs lend theirs.
func fieldsOf(t reflect.Type) (names []string, fields map[string]field, inlineMap reflect.Type) {
	fields = map[string]field{}
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("yaml")
		if !f.IsExported() || tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if strings.Contains(","+opts+",", ",inline,") {
			ft := f.Type
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			switch ft.Kind() {
			case reflect.Struct:
				n, fs, m := fieldsOf(ft)
				names = append(names, n...)
				for k, v := range fs {
					fields[k] = v
				}
				if m != nil {
					inlineMap = m
				}
			case reflect.Map:
				inlineMap = ft
			}
			continue
		}
		if name == "" {
			name = strings.ToLower(f.Name)
		}
		names = append(names, name)
		fields[name] = field{t: f.Type, unit: f.Tag.Get(Tag)}
	}
	return names, fields, inlineMap
}

func (w *walker) structure(n *yaml.Node, t reflect.Type, path string) error {
	names, fields, inlineMap := fieldsOf(t)
	if n.Kind != yaml.MappingNode {
		return At(n, path, fmt.Errorf("want a mapping of %s, not %s", strings.Join(names, ", "), kindWords(n)))
	}
	ps, err := w.pairs(n, false, 0)
	if err != nil {
		return err
	}
	first := map[string]int{}
	for _, p := range ps {
		f, ok := fields[p.key.Value]
		switch {
		case p.key.Kind != yaml.ScalarNode:
			return UnknownKey(p.key, path, names)
		case !ok && inlineMap != nil:
			f = field{t: inlineMap.Elem()}
		case !ok:
			return UnknownKey(p.key, path, names)
		}
		if line, dup := first[p.key.Value]; dup && !p.merged {
			return Duplicate(p.key, path, line)
		}
		if _, seen := first[p.key.Value]; !seen {
			first[p.key.Value] = p.key.Line
		}
		if err := w.walk(p.value, f.t, join(path, p.key.Value), f.unit); err != nil {
			return err
		}
	}
	return nil
}

func (w *walker) mapping(n *yaml.Node, t reflect.Type, path string) error {
	if n.Kind != yaml.MappingNode {
		return At(n, path, fmt.Errorf("want a mapping, not %s", kindWords(n)))
	}
	ps, err := w.pairs(n, false, 0)
	if err != nil {
		return err
	}
	first := map[string]int{}
	for _, p := range ps {
		if p.key.Kind != yaml.ScalarNode {
			return At(p.key, path, fmt.Errorf("want a key by name, not %s", kindWords(p.key)))
		}
		if err := w.leaf(p.key, t.Key(), join(path, p.key.Value), ""); err != nil {
			return err
		}
		if line, dup := first[p.key.Value]; dup && !p.merged {
			return Duplicate(p.key, path, line)
		}
		if _, seen := first[p.key.Value]; !seen {
			first[p.key.Value] = p.key.Line
		}
		if err := w.walk(p.value, t.Elem(), join(path, p.key.Value), ""); err != nil {
			return err
		}
	}
	return nil
}

func (w *walker) sequence(n *yaml.Node, t reflect.Type, path, unit string) error {
	if n.Kind != yaml.SequenceNode {
		return At(n, path, fmt.Errorf("want a list, not %s", kindWords(n)))
	}
	if t.Kind() == reflect.Array && len(n.Content) != t.Len() {
		return At(n, path, fmt.Errorf("want a list of %d, not %d", t.Len(), len(n.Content)))
	}
	for i, item := range n.Content {
		if err := w.walk(item, t.Elem(), fmt.Sprintf("%s[%d]", path, i), unit); err != nil {
			return err
		}
	}
	return nil
}

// anything checks a value read into an interface (a claims map, say): yaml.v3 takes any shape
// there, save a key that is a mapping or a list, which no Go map can hold.
func (w *walker) anything(n *yaml.Node, t reflect.Type, path string) error {
	switch n.Kind {
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			if k.Kind == yaml.AliasNode && k.Alias != nil {
				k = k.Alias
			}
			if k.Kind != yaml.ScalarNode {
				return At(n.Content[i], path, fmt.Errorf("want a key by name, not %s", kindWords(k)))
			}
			if err := w.walk(v, t, join(path, k.Value), ""); err != nil {
				return err
			}
		}
	case yaml.SequenceNode:
		for i, item := range n.Content {
			if err := w.walk(item, t, fmt.Sprintf("%s[%d]", path, i), ""); err != nil {
				return err
			}
		}
	}
	return nil
}

// leaf checks a single value against its type with the words of its kind.
func (w *walker) leaf(n *yaml.Node, t reflect.Type, path, unit string) error {
	if err := single(n); err != nil {
		return At(n, path, err)
	}
	var err error
	switch {
	case unit == "rate" && t.Kind() == reflect.Float64:
		var v float64
		if v, err = Rate(n); err == nil {
			// yaml.v3 reads 250/s as text: the node is rewritten to the plain number it means.
			n.Value, n.Tag, n.Style = strconv.FormatFloat(v, 'g', -1, 64), "!!float", 0
		}
	case t == durationType:
		_, err = Duration(n)
	case t == timeType:
		_, err = Time(n)
	case t.Kind() == reflect.Bool:
		_, err = Bool(n)
	case t.Kind() >= reflect.Int && t.Kind() <= reflect.Int64:
		if n.Decode(reflect.New(t).Interface()) != nil || !whole(n) {
			err = notWhole(n)
		}
	case t.Kind() >= reflect.Uint && t.Kind() <= reflect.Uintptr:
		if n.Decode(reflect.New(t).Interface()) != nil || !whole(n) {
			_, err = Uint(n)
			if err == nil {
				err = notWhole(n) // in range for 64 bits, not for this one
			}
		}
	case t.Kind() == reflect.Float32 || t.Kind() == reflect.Float64:
		if _, err = Float(n); err == nil && n.Decode(reflect.New(t).Interface()) != nil {
			err = fmt.Errorf("%s is out of range", n.Value)
		}
	case n.Decode(reflect.New(t).Interface()) != nil:
		err = fmt.Errorf("%s cannot be read here", quote(n.Value))
	}
	if err != nil {
		return At(n, path, err)
	}
	return nil
}

// yaml.v3's messages that name Go types, and the file's words for them.
var (
	typeErrLine   = regexp.MustCompile(`^line (\d+): (.*)$`)
	syntaxErrLine = regexp.MustCompile(`^(?:yaml: )?line (\d+): (.*)$`)
	notFound      = regexp.MustCompile(`field (.*) not found in type \S+`)
	cannot        = regexp.MustCompile("cannot (?:unmarshal|decode) !!\\w+ (`[^`]*` )?(?:into|as a) \\S+")
	parsingTime   = regexp.MustCompile(`parsing time "([^"]*)".*`)
	goTypeName    = regexp.MustCompile(`!!\w+|\b[a-z]\w*\.[A-Z]\w*|\*?\[\]\w+|map\[\w+\]\w+`)
)

// explain turns an error of yaml.v3 into an *Error: its line kept, and no Go type in its words.
func explain(err error, path string) *Error {
	msg := err.Error()
	line := 0
	var te *yaml.TypeError
	if errors.As(err, &te) && len(te.Errors) > 0 {
		msg = te.Errors[0]
		if m := typeErrLine.FindStringSubmatch(msg); m != nil {
			line, _ = strconv.Atoi(m[1])
			msg = m[2]
		}
	} else if m := syntaxErrLine.FindStringSubmatch(msg); m != nil {
		line, _ = strconv.Atoi(m[1])
		msg = m[2]
	}
	msg = strings.TrimPrefix(msg, "yaml: ")
	msg = notFound.ReplaceAllString(msg, "unknown key $1")
	msg = cannot.ReplaceAllStringFunc(msg, func(s string) string {
		if v := cannot.FindStringSubmatch(s)[1]; v != "" {
			return strings.Trim(v, "` ") + " is of the wrong kind here"
		}
		return "a value of the wrong kind here"
	})
	msg = parsingTime.ReplaceAllString(msg, `"$1" is not a time: `+timeHint)
	msg = goTypeName.ReplaceAllString(msg, "a value")
	return &Error{Field: path, Line: line, Err: errors.New(msg)}
}
