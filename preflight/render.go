package preflight

import (
	"encoding/json"
	"fmt"
	"io"

	"github.com/fsctl/fsctl/internal/contract/finding"
)

// Render prints the checklist as a table, what --fix did, and a one-line verdict.
func (r Report) Render(w io.Writer, strict bool) error {
	what := "sale " + r.SaleID
	if r.SaleID == "" {
		what = "target" // a foreign target without sales
	}
	fmt.Fprintf(w, "preflight of %s at %s\n", what, r.At.Format("2006-01-02T15:04:05Z"))
	if r.Profile != "" {
		fmt.Fprintf(w, "target profile %s (%s)\n", r.Profile, r.ProfileSource)
	}
	for _, f := range r.Fixed {
		if f.Error != "" {
			fmt.Fprintf(w, "fix FAILED  %s: %s: %s\n", f.Check, f.Action, f.Error)
		} else {
			fmt.Fprintf(w, "fixed       %s: %s\n", f.Check, f.Action)
		}
	}
	if err := finding.Table(w, r.Results); err != nil {
		return err
	}
	verdict := "READY"
	if !r.Ready(strict) {
		verdict = "NOT READY"
	}
	_, err := fmt.Fprintf(w, "%s: %d passed, %d warnings, %d failed, %d skipped in %.0f ms\n", verdict,
		r.Count(finding.Pass), r.Count(finding.Warn), r.Count(finding.Fail), r.Count(finding.Skip), r.ElapsedMs)
	return err
}

// WriteJSON writes the report as one indented JSON document with the verdict.
func (r Report) WriteJSON(w io.Writer, strict bool) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false) // details hold SQL such as "sold <= quantity"
	return enc.Encode(struct {
		Report
		Ready  bool `json:"ready"`
		Strict bool `json:"strict"`
	}{r, r.Ready(strict), strict})
}
