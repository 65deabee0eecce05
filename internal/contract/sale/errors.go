package sale

import "github.com/fsctl/fsctl/internal/platform/yamlfield"

// FieldError is a sale that fails validation at one field: its path as a sale file spells it
// (perUserLimit, room.admissionRate, items[2].quantity) and its line.
type FieldError = yamlfield.Error

func invalid(field, format string, args ...any) *FieldError {
	return yamlfield.Errorf(field, format, args...)
}
