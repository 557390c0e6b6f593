package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"text/template"
	"unicode"
	"unicode/utf8"

	"github.com/spf13/cobra"
)

// formatFlag adds --format to a listing command.
func formatFlag(cmd *cobra.Command, format *string) {
	cmd.Flags().StringVar(format, "format", "table", "output format: table, json, or a Go template run on the JSON view (on each entry of a list), "+
		"its JSON keys as fields: '{{.id}} {{.name}}'; functions json and join")
}

// checkFormat is a usage error unless format is table, json or a Go
// template that parses. A template holds "{{": a word such as "yaml" is a
// mistake, not a template printing that word.
func checkFormat(format string) error {
	if format == "table" || format == "json" {
		return nil
	}
	if !strings.Contains(format, "{{") {
		return fmt.Errorf("--format must be table, json or a Go template ('{{.id}}'), not %q", format)
	}
	_, err := parseTemplate(format)
	return err
}

// templateFuncs are what --format templates may call besides text/template's
// own: json writes a value as JSON, join joins a list's items.
var templateFuncs = template.FuncMap{
	"json": func(v any) (string, error) {
		b, err := json.Marshal(v)
		return string(b), err
	},
	"join": func(items []any, sep string) string {
		s := make([]string, len(items))
		for i, it := range items {
			s[i] = fmt.Sprint(it)
		}
		return strings.Join(s, sep)
	},
}

func parseTemplate(format string) (*template.Template, error) {
	// missingkey=error: a misspelt field fails instead of printing
	// "<no value>" into a script's input.
	t, err := template.New("format").Option("missingkey=error").Funcs(templateFuncs).Parse(format)
	if err != nil {
		return nil, fmt.Errorf("--format: %w", err)
	}
	return t, nil
}

// writeAs writes v as format asks when that is json or a template, and
// reports whether it did: a table is the caller's to draw. A template runs
// on v's JSON view decoded, once per entry when v is a list, each output
// ended by a newline.
func writeAs(w io.Writer, format string, v any) (bool, error) {
	switch format {
	case "table":
		return false, nil
	case "json":
		return true, writeJSON(w, v)
	}
	t, err := parseTemplate(format)
	if err != nil {
		return true, err
	}
	data, err := templateData(v)
	if err != nil {
		return true, err
	}
	entries, isList := data.([]any)
	if !isList {
		entries = []any{data}
	}
	bw := bufio.NewWriter(w)
	for _, e := range entries {
		if err := t.Execute(bw, e); err != nil {
			return true, fmt.Errorf("--format: %w", err)
		}
		bw.WriteByte('\n')
	}
	return true, bw.Flush()
}

// templateData is v as a script reading the JSON would see it, with
// integers as int64 (uint64 past its range) so that templates compare
// them ({{if eq .replicas 2}}) and print them exactly.
func templateData(v any) (any, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var data any
	if err := dec.Decode(&data); err != nil {
		return nil, err
	}
	return numbers(data), nil
}

func numbers(v any) any {
	switch v := v.(type) {
	case map[string]any:
		for k, e := range v {
			v[k] = numbers(e)
		}
	case []any:
		for i, e := range v {
			v[i] = numbers(e)
		}
	case json.Number:
		if i, err := strconv.ParseInt(string(v), 10, 64); err == nil {
			return i
		}
		if u, err := strconv.ParseUint(string(v), 10, 64); err == nil {
			return u
		}
		f, _ := v.Float64()
		return f
	}
	return v
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
