package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
)

// inspectFlags are `inspect`'s output flags: JSON by default (what
// scripts and the integration tests read), --pretty for people, or a
// --format template.
type inspectFlags struct {
	pretty bool
	format string
}

func (f *inspectFlags) add(cmd *cobra.Command) {
	cmd.Flags().BoolVar(&f.pretty, "pretty", false, "print indented key: value lines for people (unset fields left out) instead of JSON")
	cmd.Flags().StringVar(&f.format, "format", "json", "json, or a Go template run on the JSON view, its keys as fields ('{{.id}} {{.spec.name}}')")
}

// check is a usage error for flags that contradict or a bad template.
func (f *inspectFlags) check() error {
	if f.format == "table" {
		return fmt.Errorf("--format table: inspect prints json, --pretty or a template")
	}
	if err := checkFormat(f.format); err != nil {
		return err
	}
	if f.pretty && f.format != "json" {
		return fmt.Errorf("--pretty and --format %q: give one", f.format)
	}
	return nil
}

func (f *inspectFlags) write(w io.Writer, view any) error {
	if f.pretty {
		return writePretty(w, view)
	}
	_, err := writeAs(w, f.format, view)
	return err
}

// writePretty writes a JSON view as indented "key: value" lines, lists
// as "- " items. What is unset (null, "", [] and {}) is left out: the
// JSON shows it, people need not read it. Values are printed terminalSafe.
func writePretty(w io.Writer, view any) error {
	var b strings.Builder
	prettyValue(&b, view, 0)
	_, err := io.WriteString(w, b.String())
	return err
}

func prettyValue(b *strings.Builder, v any, indent int) {
	switch v := v.(type) {
	case jsonObject:
		for _, f := range v {
			prettyField(b, f.Key, f.Value, indent)
		}
	case []any:
		for _, e := range v {
			prettyItem(b, e, indent)
		}
	default:
		if !isUnset(v) {
			fmt.Fprintf(b, "%s%s\n", strings.Repeat(" ", indent), prettyScalar(v))
		}
	}
}

func prettyField(b *strings.Builder, key string, v any, indent int) {
	if isUnset(v) {
		return
	}
	pad := strings.Repeat(" ", indent)
	switch v.(type) {
	case jsonObject, []any:
		var inner strings.Builder
		prettyValue(&inner, v, indent+2)
		if inner.Len() > 0 {
			fmt.Fprintf(b, "%s%s:\n%s", pad, terminalSafe(key), inner.String())
		}
	default:
		fmt.Fprintf(b, "%s%s: %s\n", pad, terminalSafe(key), prettyScalar(v))
	}
}

// prettyItem writes one list element: "- value", or an object's fields
// with the first on the dash's line.
func prettyItem(b *strings.Builder, v any, indent int) {
	pad := strings.Repeat(" ", indent)
	obj, ok := v.(jsonObject)
	if !ok {
		if _, list := v.([]any); list {
			fmt.Fprintf(b, "%s-\n", pad)
			prettyValue(b, v, indent+2)
			return
		}
		fmt.Fprintf(b, "%s- %s\n", pad, prettyScalar(v))
		return
	}
	var inner strings.Builder
	prettyValue(&inner, obj, indent+2)
	s := inner.String()
	if s == "" {
		fmt.Fprintf(b, "%s- {}\n", pad)
		return
	}
	// The first line's indent becomes the dash.
	b.WriteString(pad + "- " + s[indent+2:])
}

func prettyScalar(v any) string {
	switch v := v.(type) {
	case string:
		return terminalSafe(v)
	case nil:
		return "null"
	default:
		return fmt.Sprint(v)
	}
}

func isUnset(v any) bool {
	switch v := v.(type) {
	case nil:
		return true
	case string:
		return v == ""
	case []any:
		return len(v) == 0
	case jsonObject:
		return len(v) == 0
	}
	return false
}
