package main

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// report is what a command prints: a table (or text) for people, JSON for machines.
type report interface {
	Render(io.Writer) error
	WriteJSON(io.Writer) error
}

// The formats a command's -o/--output offers; the first is the default.
var (
	tableOrJSON = []string{"table", "json"}
	textOrJSON  = []string{"text", "json"}
)

// outputFlag is the value of -o/--output: one of the command's formats, checked as the flag is
// parsed, so a bad value stops the command before it does anything.
type outputFlag struct {
	format  string
	formats []string
	code    int // the exit status of a bad value, which differs between commands
}

// bindOutput adds -o/--output to f, defaulting to formats[0]; a bad value exits with code.
func bindOutput(f *pflag.FlagSet, o *outputFlag, usage string, code int, formats []string) {
	*o = outputFlag{format: formats[0], formats: formats, code: code}
	f.VarP(o, "output", "o", usage)
}

func (o *outputFlag) String() string { return o.format }

// Type is "string" so --help shows the flag and its default as it shows a plain string flag.
func (o *outputFlag) Type() string { return "string" }

func (o *outputFlag) Set(v string) error {
	if !slices.Contains(o.formats, v) {
		return &exitError{code: o.code, err: fmt.Errorf("--output %q: want %s", v, strings.Join(o.formats, " or "))}
	}
	o.format = v
	return nil
}

// json reports whether stdout is one JSON document, which nothing else may be printed into.
func (o outputFlag) json() bool { return o.format == "json" }

// beside is where a command prints what is not its report: out, except under json, where it goes
// to progress so stdout stays JSON.
func (o outputFlag) beside(out, progress io.Writer) io.Writer {
	if o.json() {
		return progress
	}
	return out
}

// writeReport prints r as --output asks: json, or the table (text).
func writeReport(w io.Writer, output outputFlag, r report) error {
	if output.json() {
		return r.WriteJSON(w)
	}
	return r.Render(w)
}

// flagError is a command's FlagErrorFunc: a flag value that decided its own exit status (a bad
// --output) is reported as it is; any other error as orElse says.
func flagError(orElse func(error) error) func(*cobra.Command, error) error {
	return func(_ *cobra.Command, err error) error {
		if ee, ok := errors.AsType[*exitError](err); ok {
			return ee
		}
		return orElse(err)
	}
}
