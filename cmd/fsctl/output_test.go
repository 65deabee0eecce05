package main

import (
	"bytes"
	"io"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// TestOutputFlagOfEveryCommand walks the command tree: every -o/--output format flag keeps the
// formats, default and help it has always had, and a bad value is refused as the flag is parsed,
// before the command does anything, with the message and exit status that command always gave.
func TestOutputFlagOfEveryCommand(t *testing.T) {
	const table, text = `want table or json`, `want text or json`
	for path, tc := range map[string]struct {
		args    []string // what else the command needs to get as far as the flag
		formats []string
		usage   string
		code    int
		want    string
	}{
		"fsctl blast":         {[]string{"--sale", "s", "--item", "i"}, tableOrJSON, "report format: table or json", 2, table},
		"fsctl blast merge":   {[]string{"x.jsonl"}, tableOrJSON, "report format: table or json", 2, table},
		"fsctl preflight":     {[]string{"--sale", "s"}, tableOrJSON, "table or json", 1, table},
		"fsctl reconcile":     {[]string{"--sale", "s"}, tableOrJSON, "table or json", 1, table},
		"fsctl warroom":       {[]string{"--sale", "s"}, tableOrJSON, "snapshot format with --once: table or json", 2, table},
		"fsctl gameday":       {nil, textOrJSON, "final report on stdout: text or json", 2, text},
		"fsctl gameday drill": {[]string{"--sale", "s"}, textOrJSON, "report format: text or json", 2, text},
		"fsctl profile check": {[]string{"--sale", "s"}, tableOrJSON, "table or json", 2, table},
	} {
		cmd, _, err := newRootCmd().Find(strings.Fields(path)[1:])
		if err != nil || cmd.CommandPath() != path {
			t.Fatalf("%s: %v", path, err)
		}
		f := cmd.Flags().Lookup("output")
		if f == nil || f.Shorthand != "o" || f.Usage != tc.usage || f.DefValue != tc.formats[0] || f.Value.Type() != "string" {
			t.Errorf("%s: --output flag %+v", path, f)
			continue
		}
		for _, format := range tc.formats {
			if err := f.Value.Set(format); err != nil || f.Value.String() != format {
				t.Errorf("%s -o %s: %v, got %q", path, format, err, f.Value.String())
			}
		}
		other := map[string]string{table: "text", text: "table"}[tc.want] // the other commands' default
		for _, bad := range []string{"bogus", other} {
			args := append(strings.Fields(path)[1:], tc.args...)
			for _, flag := range [][]string{{"-o", bad}, {"--output=" + bad}} {
				_, code, err := runCLI(t, append(args, flag...)...)
				if want := `--output "` + bad + `": ` + tc.want; code != tc.code || err == nil || err.Error() != want {
					t.Errorf("%s %v: exit %d, %v; want exit %d, %s", path, flag, code, err, tc.code, want)
				}
			}
		}
	}
	// Every command with a format flag is in the table above; profile tokens' -o is a file.
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if f := c.Flags().Lookup("output"); f != nil {
			if _, ok := f.Value.(*outputFlag); !ok && c.CommandPath() != "fsctl profile tokens" {
				t.Errorf("%s: --output is not an outputFlag", c.CommandPath())
			}
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(newRootCmd())
}

// TestOtherFlagErrorsKeepTheirStatus: only --output's own error passes through flagError as it
// is; any other bad flag is a usage error (2) where the command says so, else exit 1.
func TestOtherFlagErrorsKeepTheirStatus(t *testing.T) {
	for _, tc := range []struct {
		args []string
		code int
	}{
		{[]string{"blast", "--buyers", "x"}, 2},
		{[]string{"blast", "merge", "x.jsonl", "--max-p99", "x"}, 2},
		{[]string{"preflight", "--timeout", "x"}, 1},
		{[]string{"reconcile", "--sale", "s", "--timeout", "x"}, 1},
		{[]string{"warroom", "--sale", "s", "--interval", "x"}, 1},
		{[]string{"gameday", "--redis-port", "x"}, 1},
	} {
		_, code, err := runCLI(t, tc.args...)
		if code != tc.code || err == nil || !strings.Contains(err.Error(), `invalid argument "x"`) {
			t.Errorf("%v: exit %d, %v; want exit %d naming the bad value", tc.args, code, err, tc.code)
		}
	}
}

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
