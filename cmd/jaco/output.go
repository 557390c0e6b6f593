package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

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

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// table writes aligned columns; rows are tab-separated.
func table(w io.Writer, header string, rows []string) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, header)
	for _, r := range rows {
		fmt.Fprintln(tw, r)
	}
	return tw.Flush()
}

// word renders an enum name like NODE_STATE_READY as "ready".
func word(enumName, prefix string) string {
	return strings.ToLower(strings.TrimPrefix(enumName, prefix))
}
