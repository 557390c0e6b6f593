package main

import (
	"fmt"
	"io"
	"log/slog"
)

// newLogger builds the daemon's logger from --log-format and --log-level.
// Both are checked before anything starts: a value jacod does not know is
// a usage error, as it would be for any other flag.
func newLogger(w io.Writer, format, level string) (*slog.Logger, error) {
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("--log-level: %w", err)
	}
	opts := &slog.HandlerOptions{Level: lv}
	switch format {
	case "text":
		return slog.New(slog.NewTextHandler(w, opts)), nil
	case "json":
		// One object a line, for collectors that parse rather than grep.
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	default:
		return nil, fmt.Errorf("--log-format: %q is neither text nor json", format)
	}
}
