package main

import (
	"fmt"
	"io"
	"log/slog"
	"strings"
)

// newLogger is the server's log: text for people or one JSON object a line for a log pipeline
// (--log-format), from --log-level up. A purchase that goes well logs nothing (a burst would write
// a line for every buyer); one that fails on a store logs a warning or an error.
func newLogger(w io.Writer, format, level string) (*slog.Logger, error) {
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("--log-level %q: want debug, info, warn or error", level)
	}
	opts := &slog.HandlerOptions{Level: lv}
	switch strings.ToLower(format) {
	case "text":
		return slog.New(slog.NewTextHandler(w, opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	}
	return nil, fmt.Errorf("--log-format %q: want text or json", format)
}
