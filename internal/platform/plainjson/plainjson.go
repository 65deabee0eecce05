// Package plainjson reads the plainest JSON by hand: strings of printable ASCII without escapes,
// which encoding/json decodes to the same bytes, and the white space between tokens. The fast
// paths built on it (a buyer's token claims, the load generator's answers) take what it reads and
// leave anything else to encoding/json.
package plainjson

// String reads the JSON string at b[i] if it is printable ASCII without escapes, and returns its
// contents and the index after its closing quote.
func String(b []byte, i int) ([]byte, int, bool) {
	if i >= len(b) || b[i] != '"' {
		return nil, 0, false
	}
	for j := i + 1; j < len(b); j++ {
		switch ch := b[j]; {
		case ch == '"':
			return b[i+1 : j], j + 1, true
		case ch < 0x20 || ch > 0x7e || ch == '\\':
			return nil, 0, false
		}
	}
	return nil, 0, false
}

// SkipSpace returns the index of the first byte at or after i that is not JSON's white space.
func SkipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}
