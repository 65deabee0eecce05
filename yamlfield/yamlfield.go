// Package yamlfield names where in a YAML file a value that fails validation is: its field path
// (items[2].quantity) and its line, so every file fsctl reads reports errors the same way.
package yamlfield

import (
	"fmt"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// Error is a file that fails validation at one field. Field is the field's path as the file
// spells it (perUserLimit, room.admissionRate, items[2].quantity); Line is where the file sets it,
// or where its parent starts when the file leaves it out (0 when not read from a file).
type Error struct {
	Field string
	Line  int
	Err   error
}

func (e *Error) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("line %d: %s: %v", e.Line, e.Field, e.Err)
	}
	return e.Err.Error()
}

func (e *Error) Unwrap() error { return e.Err }

// Errorf is an Error at field, its line found later with Line.
func Errorf(field, format string, args ...any) *Error {
	return &Error{Field: field, Err: fmt.Errorf(format, args...)}
}

// Line finds the line of a field path in a YAML document: the value's line when the path is
// there, else the line of the deepest part of it that is.
func Line(doc *yaml.Node, path string) int {
	n := doc
	if n.Kind == yaml.DocumentNode && len(n.Content) > 0 {
		n = n.Content[0]
	}
	line := n.Line
	for part := range strings.SplitSeq(path, ".") {
		name, idx := part, -1
		if open := strings.IndexByte(part, '['); open > 0 && strings.HasSuffix(part, "]") {
			name = part[:open]
			if i, err := strconv.Atoi(part[open+1 : len(part)-1]); err == nil {
				idx = i
			}
		}
		next := mappingValue(n, name)
		if next == nil {
			return line
		}
		n, line = next, next.Line
		if idx >= 0 {
			if n.Kind != yaml.SequenceNode || idx >= len(n.Content) {
				return line
			}
			n, line = n.Content[idx], n.Content[idx].Line
		}
	}
	return line
}

func mappingValue(n *yaml.Node, key string) *yaml.Node {
	if n.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return n.Content[i+1]
		}
	}
	return nil
}
