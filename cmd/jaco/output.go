package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"unicode"
	"unicode/utf8"

	"github.com/spf13/cobra"
)

// formatFlag adds --format to a listing command.
func formatFlag(cmd *cobra.Command, format *string) {
	cmd.Flags().StringVar(format, "format", "table", "output format: table or json")
}

func checkFormat(format string) error {
	if format != "table" && format != "json" {
		return fmt.Errorf("--format must be table or json, not %q", format)
	}
	return nil
}

// writeAs writes v as format asks when that is json, and reports whether
// it did: a table is the caller's to draw.
func writeAs(w io.Writer, format string, v any) (bool, error) {
	if format == "json" {
		return true, writeJSON(w, v)
	}
	return false, nil
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// table writes aligned columns: header is tab-separated, each row a
// slice of cells. Every cell is printed terminalSafe: cells hold what the
// cluster stores, which is what some client sent.
func table(w io.Writer, header string, rows [][]string) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, header)
	for _, r := range rows {
		cells := make([]string, len(r))
		for i, c := range r {
			cells[i] = terminalSafe(c)
		}
		fmt.Fprintln(tw, strings.Join(cells, "\t"))
	}
	return tw.Flush()
}

// terminalSafe escapes, as strconv.Quote would, what a terminal would act
// on instead of showing: control characters (escape sequences, newlines,
// tabs that would shift columns), format characters such as bidi
// overrides, and bytes that are not UTF-8. Printable text, emoji
// included, is left as it is, and so are backslashes: the point is a
// terminal that shows what it was sent, not a reversible encoding (--format
// json gives exact values).
func terminalSafe(s string) string {
	var b strings.Builder
	for i, r := range s {
		switch {
		case r == utf8.RuneError && !strings.HasPrefix(s[i:], "\uFFFD"):
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case unicode.IsPrint(r):
			b.WriteRune(r)
		default:
			q := strconv.QuoteRune(r)
			b.WriteString(q[1 : len(q)-1])
		}
	}
	return b.String()
}

// word renders an enum name like NODE_STATE_READY as "ready".
func word(enumName, prefix string) string {
	return strings.ToLower(strings.TrimPrefix(enumName, prefix))
}
