package main

import (
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"

	"github.com/spf13/cobra"
)

// listFlags are the output flags of ls and ps: --format, -q and
// --filter.
type listFlags struct {
	format  string
	quiet   bool
	filters []string
	// keys are the filter keys the command takes, each with the values it
	// allows (nil: any value).
	keys map[string][]string
	// parsed is filters by key, set by check.
	parsed map[string][]string
}

func (l *listFlags) add(cmd *cobra.Command, keysHelp string) {
	formatFlag(cmd, &l.format)
	cmd.Flags().BoolVarP(&l.quiet, "quiet", "q", false, "print only ids, one per line")
	cmd.Flags().StringArrayVarP(&l.filters, "filter", "f", nil, "show only entries matching KEY=VALUE (repeatable: "+
		"values of one key are alternatives, different keys must all match); keys: "+keysHelp)
}

// check is a usage error for a bad --format or --filter; it parses the
// filters.
func (l *listFlags) check() error {
	if err := checkFormat(l.format); err != nil {
		return err
	}
	parsed, err := parseFilters(l.filters, l.keys)
	l.parsed = parsed
	return err
}

// parseFilters reads KEY=VALUE filters, refusing a key not in keys or a
// value keys does not allow for it.
func parseFilters(args []string, keys map[string][]string) (map[string][]string, error) {
	out := map[string][]string{}
	for _, a := range args {
		k, v, ok := strings.Cut(a, "=")
		k = strings.ToLower(strings.TrimSpace(k))
		if !ok || k == "" || v == "" {
			return nil, fmt.Errorf("--filter %q: want KEY=VALUE", a)
		}
		allowed, known := keys[k]
		if !known {
			names := make([]string, 0, len(keys))
			for n := range keys {
				names = append(names, n)
			}
			sort.Strings(names)
			return nil, fmt.Errorf("--filter %q: no key %q here; keys: %s", a, k, strings.Join(names, ", "))
		}
		if allowed != nil && !slices.Contains(allowed, v) {
			return nil, fmt.Errorf("--filter %s=%q: want one of %s", k, v, strings.Join(allowed, ", "))
		}
		out[k] = append(out[k], v)
	}
	return out, nil
}

// match reports whether an entry passes the filters of key: true when
// none is given, else when some value satisfies ok.
func (l *listFlags) match(key string, ok func(value string) bool) bool {
	vals := l.parsed[key]
	if len(vals) == 0 {
		return true
	}
	return slices.ContainsFunc(vals, ok)
}

// has reports whether a filter on key was given.
func (l *listFlags) has(key string) bool { return len(l.parsed[key]) > 0 }

// writeList prints a listing as lf asks: the ids with -q, JSON or a
// template with --format, else the table.
func writeList[V any](cmd *cobra.Command, lf *listFlags, views []V, id func(V) string, table func(io.Writer, []V) error) error {
	if lf.quiet {
		ids := make([]string, len(views))
		for i, v := range views {
			ids[i] = id(v)
		}
		return writeIDs(cmd, ids)
	}
	if ok, err := writeAs(cmd.OutOrStdout(), lf.format, views); ok {
		return err
	}
	return table(cmd.OutOrStdout(), views)
}

// writeIDs writes -q's output: the ids, one per line.
func writeIDs(cmd *cobra.Command, ids []string) error {
	var b strings.Builder
	for _, id := range ids {
		b.WriteString(terminalSafe(id) + "\n")
	}
	_, err := fmt.Fprint(cmd.OutOrStdout(), b.String())
	return err
}

// equal and prefix are the two ways a filter value matches a field.
func equal(field string) func(string) bool { return func(v string) bool { return field == v } }
func prefix(field string) func(string) bool {
	return func(v string) bool { return strings.HasPrefix(field, v) }
}
