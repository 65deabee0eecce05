// Package yamlfield reads every YAML file fsctl takes (sales, target profiles, game-day scenarios,
// alert rules, classification rules) one way, and says what is wrong with one the same way: the
// file, the line, the field's path as the file spells it (items[2].quantity) and what to write
// instead, in the user's words rather than Go's. A file that cannot be read is a plain error; a
// file that is read but wrong is an *Error, so a command's exit status can tell the two apart.
package yamlfield

import (
	"fmt"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// Error is a file that is read but wrong, at one field. File is the file's path, once the loader
// knows it; Field is the field's path as the file spells it (perUserLimit, room.admissionRate,
// items[2].quantity), empty for a mistake of the document (its syntax); Line is where the file
// sets it, or where its parent starts when the file leaves it out (0 when not read from a file).
type Error struct {
	File  string
	Field string
	Line  int
	Err   error
}

// Error reads "file: line 3: field: what is wrong", leaving out what is not known. A value that
// was not read from a file (no file, no line) is described by Err alone, which names its field.
func (e *Error) Error() string {
	if e.File == "" && e.Line <= 0 {
		return e.Err.Error()
	}
	parts := make([]string, 0, 4)
	if e.File != "" {
		parts = append(parts, e.File)
	}
	if e.Line > 0 {
		parts = append(parts, "line "+strconv.Itoa(e.Line))
	}
	if e.Field != "" {
		parts = append(parts, e.Field)
	}
	return strings.Join(append(parts, e.Err.Error()), ": ")
}

func (e *Error) Unwrap() error { return e.Err }

// Errorf is an Error at field, its line found later with Line.
func Errorf(field, format string, args ...any) *Error {
	return &Error{Field: field, Err: fmt.Errorf(format, args...)}
}

// At is an Error at node n of the file: its line, the field's path and what is wrong.
func At(n *yaml.Node, field string, err error) *Error {
	return &Error{Field: field, Line: n.Line, Err: err}
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
	if n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
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
