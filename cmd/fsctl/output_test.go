package main

import (
	"bytes"
	"io"
	"testing"
)

// fakeReport records which of its two forms was printed.
type fakeReport struct{ printed string }

func (r *fakeReport) Render(io.Writer) error    { r.printed = "render"; return nil }
func (r *fakeReport) WriteJSON(io.Writer) error { r.printed = "json"; return nil }

func TestWriteReportAndWhatGoesBeside(t *testing.T) {
	var stdout, stderr bytes.Buffer
	for format, want := range map[string]string{"table": "render", "text": "render", "json": "json"} {
		o := outputFlag{format: format}
		var r fakeReport
		if err := writeReport(&stdout, o, &r); err != nil || r.printed != want {
			t.Errorf("-o %s printed %q, want %q", format, r.printed, want)
		}
		beside := o.beside(&stdout, &stderr)
		if (beside == &stderr) != (format == "json") {
			t.Errorf("-o %s: what is not the report goes to the wrong stream", format)
		}
	}
}
