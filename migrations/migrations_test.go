package migrations_test

import (
	"fmt"
	"io/fs"
	"strings"
	"testing"

	"github.com/fsctl/fsctl/migrations"
)

// TestFilesAreSequentialGooseSQL catches a misnamed or half-annotated migration without a database:
// versions must run 1, 2, 3, ... and each file needs both goose sections.
func TestFilesAreSequentialGooseSQL(t *testing.T) {
	names, err := fs.Glob(migrations.FS, "*.sql")
	if err != nil || len(names) == 0 {
		t.Fatalf("embedded migrations: %v, %v", names, err)
	}
	for i, name := range names {
		if want := fmt.Sprintf("%05d_", i+1); !strings.HasPrefix(name, want) {
			t.Errorf("%s: want prefix %s (versions are sequential)", name, want)
		}
		b, err := fs.ReadFile(migrations.FS, name)
		if err != nil {
			t.Fatal(err)
		}
		for _, section := range []string{"-- +goose Up", "-- +goose Down"} {
			if !strings.Contains(string(b), section) {
				t.Errorf("%s: missing %q", name, section)
			}
		}
	}
}
