package main

import "io"

// report is what a command prints: a table for people, JSON for machines.
type report interface {
	Render(io.Writer) error
	WriteJSON(io.Writer) error
}

// writeReport prints r as --output asks: json, or the table.
func writeReport(w io.Writer, output string, r report) error {
	if output == "json" {
		return r.WriteJSON(w)
	}
	return r.Render(w)
}
