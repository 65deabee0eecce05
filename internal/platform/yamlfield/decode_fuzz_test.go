package yamlfield

import (
	"errors"
	"regexp"
	"testing"
)

// quoted is a value of the file, as a message quotes it.
var quoted = regexp.MustCompile(`"(?:[^"\\]|\\.)*"`)

// FuzzDecode: any bytes decode into doc or fail with an *Error whose words are the file's (no
// Go type, no YAML tag) and whose field, when it names one, is where the line says; never a panic.
func FuzzDecode(f *testing.F) {
	for _, seed := range []string{
		"id: s1\nperUserLimit: 2\nholdTTL: 10m\nopensAt: 2026-12-01T12:00:00Z\nitems: [{id: a, quantity: 5}]\n",
		"id: s\nperUserLimt: 2\n",
		"holdTTL: 10 minutes\n",
		"admissionRate: 250/s\nroom: {enabled: true, waiterTTL: 30s}\n",
		"items:\n  - &a {id: a, quantity: 1}\n  - {<<: *a, quantity: 2}\n",
		"claims: {a: [1, {b: c}]}\nheaders: {X: y}\nvalue: null\n",
		"perUserLimit: !!str 5\nsmall: 300\nseed: -1\nshare: .nan\n",
		"id: a\nid: b\n",
		"- a\n",
		"id: a\nitems: [\n",
		"a: &a [*a]\n",
		"claims: {a: [{? {0: }: x}]}\n",
		"",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var d doc
		_, err := Decode(b, &d)
		if err == nil {
			return
		}
		var fe *Error
		if !errors.As(err, &fe) {
			t.Fatalf("error %v (%T) is not an *Error", err, err)
		}
		if goWords.MatchString(quoted.ReplaceAllString(fe.Err.Error(), `"…"`)) { // the file's own values aside
			t.Fatalf("message in Go's words: %v", err)
		}
	})
}
