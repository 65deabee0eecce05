package yamlfield

import (
	"fmt"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"
)

// CheckKeys checks that n is a mapping whose keys are all among known, each given once. path is
// the mapping's own path in the file ("" for the top), so a mistake names key's whole path.
func CheckKeys(n *yaml.Node, path string, known []string) error {
	if n.Kind != yaml.MappingNode {
		return At(n, path, fmt.Errorf("want a mapping of %s, not %s", strings.Join(known, ", "), kindWords(n)))
	}
	first := map[string]int{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k := n.Content[i]
		if !slices.Contains(known, k.Value) || k.Kind != yaml.ScalarNode {
			return UnknownKey(k, path, known)
		}
		if line, ok := first[k.Value]; ok {
			return Duplicate(k, path, line)
		}
		first[k.Value] = k.Line
	}
	return nil
}

// UnknownKey is key k, which is not one of known, in the mapping at path: it lists the known keys
// and offers the nearest one when the key looks like a slip of the keyboard.
func UnknownKey(k *yaml.Node, path string, known []string) *Error {
	if k.Kind != yaml.ScalarNode {
		return At(k, path, fmt.Errorf("want a key by name (known: %s), not %s", strings.Join(known, ", "), kindWords(k)))
	}
	hint := ""
	if near := Suggest(k.Value, known); near != "" {
		hint = "did you mean " + near + "? "
	}
	return At(k, join(path, k.Value), fmt.Errorf("unknown key (%sknown: %s)", hint, strings.Join(known, ", ")))
}

// Duplicate is key k given a second time in the mapping at path; first is where it was first.
func Duplicate(k *yaml.Node, path string, first int) *Error {
	return At(k, join(path, k.Value), fmt.Errorf("given twice (first at line %d)", first))
}

// Suggest returns the key of known that word most likely misspells, or "" when none is close:
// an edit or two away (a transposition counts as one), letter case aside.
func Suggest(word string, known []string) string {
	best, bestD := "", -1
	limit := 1
	if len([]rune(word)) >= 5 {
		limit = 2
	}
	for _, k := range known {
		d := distance(strings.ToLower(word), strings.ToLower(k))
		if d <= limit && (bestD < 0 || d < bestD) {
			best, bestD = k, d
		}
	}
	return best
}

// distance is the optimal-string-alignment edit distance: insertions, deletions, substitutions
// and swaps of neighbours each cost one. Keys are short, so the full table is cheap.
func distance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	if len(ra) > 64 || len(rb) > 64 { // no key is this long: not a near miss, and not worth the table
		return 1 << 30
	}
	d := make([][]int, len(ra)+1)
	for i := range d {
		d[i] = make([]int, len(rb)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(ra); i++ {
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(ra)][len(rb)]
}

// join appends key to a field path.
func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// kindWords names what a node is, as a YAML author would.
func kindWords(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.AliasNode:
		return "an alias"
	}
	if n.Value == "" {
		return "nothing"
	}
	return quote(n.Value)
}
