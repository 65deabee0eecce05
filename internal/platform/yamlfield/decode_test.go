package yamlfield

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// doc is a file with one field of each kind the loader explains.
type doc struct {
	ID       string            `yaml:"id"`
	PerUser  int               `yaml:"perUserLimit"`
	HoldTTL  time.Duration     `yaml:"holdTTL"`
	OpensAt  time.Time         `yaml:"opensAt"`
	Paused   bool              `yaml:"paused"`
	Share    float64           `yaml:"share"`
	Rate     float64           `yaml:"admissionRate" yamlfield:"rate"`
	Seed     uint64            `yaml:"seed"`
	Small    int8              `yaml:"small"`
	Headers  map[string]string `yaml:"headers"`
	Claims   map[string]any    `yaml:"claims"`
	Value    *string           `yaml:"value"`
	Items    []item            `yaml:"items"`
	Room     room              `yaml:"room"`
	Internal int               `yaml:"-"`
}

type item struct {
	ID       string `yaml:"id"`
	Quantity int64  `yaml:"quantity"`
}

type room struct {
	Enabled bool          `yaml:"enabled"`
	TTL     time.Duration `yaml:"waiterTTL"`
}

// goWords are the marks of a message in Go's words rather than the file's: a tag, a package-
// qualified type, a Go type name.
var goWords = regexp.MustCompile(`!!|\b[a-z]\w*\.[A-Z]\w*|time\.Duration|\bint64\b|\bfloat64\b|\buint64\b|\bint8\b|map\[|\[\]|unmarshal|struct`)

func TestDecodeAcceptsWhatYAMLMeans(t *testing.T) {
	in := `
id: s1
perUserLimit: 1_000
holdTTL: 1h30m
opensAt: 2026-12-01T12:00:00Z
paused: yes
share: 0.5
admissionRate: 600/m
seed: 7
headers: {X-A: b}
claims: {role: buyer, n: 3}
value: ""
items:
  - &one {id: a, quantity: 2}
  - *one
room: {enabled: true, waiterTTL: 30s}
`
	var d doc
	if _, err := Decode([]byte(in), &d); err != nil {
		t.Fatal(err)
	}
	if d.PerUser != 1000 || d.HoldTTL != 90*time.Minute || !d.Paused || d.Rate != 10 || d.Seed != 7 ||
		len(d.Items) != 2 || d.Items[1].Quantity != 2 || d.Room.TTL != 30*time.Second || d.Value == nil || d.Headers["X-A"] != "b" {
		t.Fatalf("decoded %+v", d)
	}
	if want := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC); !d.OpensAt.Equal(want) {
		t.Fatalf("opensAt %v", d.OpensAt)
	}
}

func TestDecodeExplainsMistakes(t *testing.T) {
	for _, c := range []struct {
		name, in string
		line     int
		field    string
		want     string
	}{
		{"near miss", "id: s\nperUserLimt: 2\n", 2, "perUserLimt", "unknown key (did you mean perUserLimit? known: id, perUserLimit, holdTTL,"},
		{"case slip", "holdttl: 1s\n", 1, "holdttl", "did you mean holdTTL?"},
		{"swapped letters", "room:\n  enalbed: true\n", 2, "room.enalbed", "did you mean enabled? known: enabled, waiterTTL)"},
		{"far off", "colour: red\n", 1, "colour", "unknown key (known: id,"},
		{"hidden field", "internal: 3\n", 1, "internal", "unknown key"},
		{"in a list", "items:\n  - id: a\n    quantty: 1\n", 3, "items[0].quantty", "did you mean quantity?"},
		{"twice", "id: a\nid: b\n", 2, "id", "given twice (first at line 1)"},
		{"duration in words", "holdTTL: 10 minutes\n", 1, "holdTTL", `"10 minutes" is not a duration: write it like 90s, 10m or 1h30m`},
		{"duration without unit", "holdTTL: 600\n", 1, "holdTTL", `"600" is not a duration`},
		{"nested duration", "room:\n  waiterTTL: soon\n", 2, "room.waiterTTL", `"soon" is not a duration`},
		{"time", "opensAt: tomorrow\n", 1, "opensAt", `"tomorrow" is not a time: write it like 2026-12-01T12:00:00Z`},
		{"int", "perUserLimit: two\n", 1, "perUserLimit", `"two" is not a whole number`},
		{"fraction", "perUserLimit: 1.5\n", 1, "perUserLimit", `"1.5" is not a whole number`},
		{"int out of range", "small: 300\n", 1, "small", "300 is out of range"},
		{"negative uint", "seed: -1\n", 1, "seed", "-1: must not be negative"},
		{"float", "share: half\n", 1, "share", `"half" is not a number`},
		{"nan", "share: .nan\n", 1, "share", "is not a number"},
		{"bool", "paused: maybe\n", 1, "paused", `"maybe" is not true or false`},
		{"rate", "admissionRate: fast\n", 1, "admissionRate", `"fast" is not a rate: write it like 250/s`},
		{"rate per hour", "admissionRate: 5/h\n", 1, "admissionRate", "is not a rate"},
		{"list for a value", "id: [a, b]\n", 1, "id", "want a single value, not a list"},
		{"value for a list", "items: 3\n", 1, "items", `want a list, not "3"`},
		{"value for a mapping", "room: on\n", 1, "room", `want a mapping of enabled, waiterTTL, not "on"`},
		{"mapping for a header", "headers: {a: {b: c}}\n", 1, "headers.a", "want a single value, not a mapping"},
		{"mapping as a key deep in free-form values", "claims:\n  a: {? {0: }: x}\n", 2, "claims.a", "want a key by name, not a mapping"},
		{"list as a key in a list of free-form values", "claims: {a: [{? [1]: x}]}\n", 1, "claims.a[0]", "want a key by name, not a list"},
		{"alias of a mapping as a key", "claims: {a: &k {b: 1}, c: {*k : 2}}\n", 1, "claims.c", "want a key by name, not a mapping"},
		{"top is a list", "- a\n", 1, "", "want a mapping of id, perUserLimit"},
		{"syntax", "id: a\nitems: [\n", 2, "", "did not find expected node content"},
		{"tab", "id: a\n\tpaused: true\n", 2, "", "found a tab character"},
		{"bad merge", "<<: 3\n", 1, "", "a merge (<<) takes a mapping"},
		{"unknown key in a merge", "items:\n  - &a {id: a, quantity: 1}\n  - {<<: *a, qty: 2}\n", 3, "items[1].qty", "unknown key"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var d doc
			_, err := Decode([]byte(c.in), &d)
			var fe *Error
			if !errors.As(err, &fe) {
				t.Fatalf("err %v (%T), want an *Error", err, err)
			}
			if fe.Line != c.line || fe.Field != c.field || !strings.Contains(fe.Err.Error(), c.want) {
				t.Fatalf("got line %d field %q: %v\nwant line %d field %q containing %q", fe.Line, fe.Field, fe.Err, c.line, c.field, c.want)
			}
			if goWords.MatchString(err.Error()) {
				t.Fatalf("message in Go's words: %v", err)
			}
		})
	}
}

func TestDecodeEmptyLeavesDefaults(t *testing.T) {
	for _, in := range []string{"", "# nothing\n", "\n\n"} {
		d := doc{ID: "kept"}
		docNode, err := Decode([]byte(in), &d)
		if err != nil || d.ID != "kept" || !Empty(docNode) {
			t.Fatalf("%q: %v, %+v", in, err, d)
		}
	}
}

func TestErrorNamesTheFileOnce(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "sale.yaml")
	if err := os.WriteFile(path, []byte("id: s\nperUserLimt: 2\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	parse := func(b []byte) (doc, error) {
		var d doc
		_, err := Decode(b, &d)
		return d, err
	}
	_, err := Load(path, parse)
	want := path + ": line 2: perUserLimt: unknown key (did you mean perUserLimit?"
	if err == nil || !strings.HasPrefix(err.Error(), want) || strings.Count(err.Error(), path) != 1 {
		t.Fatalf("got %v\nwant %s…", err, want)
	}
	// A file that cannot be read is not an *Error: the caller tells the two apart by type.
	_, err = Load(filepath.Join(dir, "missing.yaml"), parse)
	var fe *Error
	if err == nil || errors.As(err, &fe) || !strings.Contains(err.Error(), "missing.yaml") {
		t.Fatalf("missing file: %v (%T)", err, err)
	}
	_, err = Load(dir, parse)
	if err == nil || errors.As(err, &fe) {
		t.Fatalf("a folder: %v (%T)", err, err)
	}
	// Whatever else the parser refuses is the file's mistake too.
	_, err = Load(path, func([]byte) (int, error) { return 0, errors.New("needs items") })
	if !errors.As(err, &fe) || err.Error() != path+": needs items" {
		t.Fatalf("other error: %v", err)
	}
}

func TestErrorWithoutAFile(t *testing.T) {
	e := Errorf("perUserLimit", "sale s: perUserLimit 20: must be between 1 and 16")
	if e.Error() != "sale s: perUserLimit 20: must be between 1 and 16" {
		t.Fatalf("a value not read from a file: %q", e.Error())
	}
	e.Line = 4
	if e.Error() != "line 4: perUserLimit: sale s: perUserLimit 20: must be between 1 and 16" {
		t.Fatalf("with its line: %q", e.Error())
	}
}

func TestSuggest(t *testing.T) {
	known := []string{"name", "seed", "steps", "perUserLimit", "warn", "crit"}
	for word, want := range map[string]string{
		"stepz": "steps", "perUserLimt": "perUserLimit", "PERUSERLIMIT": "perUserLimit", "wran": "warn",
		"nmae": "name", "critical": "", "x": "", "sed": "seed", "": "",
	} {
		if got := Suggest(word, known); got != want {
			t.Errorf("Suggest(%q) = %q, want %q", word, got, want)
		}
	}
}

// tree is a type as deep as the document: a "billion laughs" of aliases reaches the walk.
type tree struct {
	Kids []tree `yaml:"kids"`
}

// TestDecodeChecksAnAnchorOnce: a document of aliases of aliases is checked node by node, not
// expansion by expansion (9^9 leaves here), and what yaml.v3 then says of it is in plain words.
func TestDecodeChecksAnAnchorOnce(t *testing.T) {
	var b strings.Builder
	b.WriteString("trees:\n  a0: &a0 {kids: [{}, {}, {}, {}, {}, {}, {}, {}, {}]}\n")
	for i := 1; i < 9; i++ {
		refs := strings.Repeat(fmt.Sprintf("*a%d, ", i-1), 8) + fmt.Sprintf("*a%d", i-1)
		fmt.Fprintf(&b, "  a%d: &a%d {kids: [%s]}\n", i, i, refs)
	}
	var d struct {
		Trees map[string]tree `yaml:"trees"`
	}
	_, err := Decode([]byte(b.String()), &d)
	var fe *Error
	if !errors.As(err, &fe) || goWords.MatchString(err.Error()) {
		t.Fatalf("got %v", err)
	}
}

// TestExplainLeavesNoGoWords: what yaml.v3 itself says is put in the file's words.
func TestExplainLeavesNoGoWords(t *testing.T) {
	for _, msg := range []string{
		"line 3: field perUserLimt not found in type sale.Sale",
		"line 5: cannot unmarshal !!str `10 minutes` into time.Duration",
		"line 2: cannot unmarshal !!seq into map[string]int",
		"yaml: cannot decode !!str `x` as a !!int",
		`parsing time "2026" as "2006-01-02T15:04:05Z07:00": cannot parse "" as "-"`,
	} {
		e := explain(errors.New(msg), "")
		if goWords.MatchString(e.Error()) {
			t.Errorf("%q -> %q", msg, e.Error())
		}
	}
}
