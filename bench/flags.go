package main

import (
	"strings"

	"github.com/spf13/cobra"
)

// oneDashLongFlags returns args with every long flag of the command they
// run written with two dashes: -work DIR becomes --work DIR, -keep=false
// --keep=false. jaco-bench's flags were once read by Go's flag package,
// which takes one dash or two; the scripts pass their callers' flags
// through, and the commands recorded in docs/bench use one, while cobra
// would read -work as the shorthands w, o, r and k. The command is the
// first argument when it names one, else the root, as jaco-bench has
// always read it. A flag's value is left as it is, whatever it looks
// like, and so is everything after "--".
func oneDashLongFlags(root *cobra.Command, args []string) []string {
	cmd := root
	if len(args) > 0 {
		for _, c := range root.Commands() {
			if c.Name() == args[0] {
				cmd = c
				break
			}
		}
	}
	cmd.InitDefaultHelpFlag()
	flags := cmd.Flags()
	out := make([]string, 0, len(args))
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			return append(out, args[i:]...)
		}
		if len(a) < 3 || a[0] != '-' {
			out = append(out, a)
			continue
		}
		name, _, hasValue := strings.Cut(strings.TrimPrefix(a[1:], "-"), "=")
		f := flags.Lookup(name)
		if f == nil {
			if a[1] != '-' && isWord(name) {
				// Not a flag either way: cobra then says "unknown flag:
				// --name", not "unknown shorthand flag" for its first letter.
				a = "-" + a
			}
			out = append(out, a)
			continue
		}
		out = append(out, "--"+strings.TrimLeft(a, "-"))
		if !hasValue && f.NoOptDefVal == "" && i+1 < len(args) {
			// The flag's value is the next argument.
			i++
			out = append(out, args[i])
		}
	}
	return out
}

// isWord reports whether s is spelled as a flag's name is: lower-case
// letters, digits and dashes, starting with a letter.
func isWord(s string) bool {
	for i, r := range s {
		if !(r >= 'a' && r <= 'z' || i > 0 && (r >= '0' && r <= '9' || r == '-')) {
			return false
		}
	}
	return s != ""
}
