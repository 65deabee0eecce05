package main

import (
	"encoding/json"
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

// The formats every command's -o/--output offers: table for people (the default; "text" is the
// same, the name the game day used) and json, one document on stdout.
var formats = []string{"table", "json"}

// outputFlag is the value of -o/--output, the same on every command: checked as the flag is
// parsed, so a bad value stops the command (exit 2) before it does anything.
type outputFlag struct {
	format string
}

// bindOutput adds -o/--output to f; what says what the command prints.
func bindOutput(f *pflag.FlagSet, o *outputFlag, what string) {
	*o = outputFlag{format: formats[0]}
	f.VarP(o, "output", "o", what+": table or json")
}

func (o *outputFlag) String() string { return o.format }

// Type is "string" so --help shows the flag and its default as it shows a plain string flag.
func (o *outputFlag) Type() string { return "string" }

func (o *outputFlag) Set(v string) error {
	if v == "text" {
		v = "table"
	}
	if !slices.Contains(formats, v) {
		return usageError(fmt.Errorf("--output %q: want %s", v, strings.Join(formats, " or ")))
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

// reportOf is a report from a value (its JSON) and how it reads for people.
type reportOf struct {
	v      any
	render func(io.Writer) error
}

func (r reportOf) Render(w io.Writer) error { return r.render(w) }

func (r reportOf) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r.v)
}

// writeReport prints r as --output asks: json, or the table (text).
func writeReport(w io.Writer, output outputFlag, r report) error {
	if output.json() {
		return r.WriteJSON(w)
	}
	return r.Render(w)
}

// flagError is the root's FlagErrorFunc, inherited by every command: a bad flag is a usage error,
// and one whose value already said so (a bad --output) keeps its own message, without pflag's
// wrapping.
func flagError(_ *cobra.Command, err error) error {
	if ee, ok := errors.AsType[*exitError](err); ok {
		return ee
	}
	return usageError(err)
}

// deprecatedAlias adds old (and its one-letter short, if any) as a hidden alias of the flag named
// name, sharing its value: using it works and prints that it is deprecated, so scripts keep
// working for a release while --help shows one name.
func deprecatedAlias(f *pflag.FlagSet, old, name string) { deprecatedAliasP(f, old, "", name) }

func deprecatedAliasP(f *pflag.FlagSet, old, short, name string) {
	alias := *f.Lookup(name)
	alias.Name, alias.Shorthand, alias.Usage = old, short, "deprecated: use --"+name
	f.AddFlag(&alias)
	_ = f.MarkDeprecated(old, "use --"+name)
	if short != "" {
		_ = f.MarkShorthandDeprecated(old, "use --"+name)
	}
}
