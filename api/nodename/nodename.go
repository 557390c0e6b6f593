// Package nodename states what a node name (Node.hostname) may be. The
// name enters at several places (a token join, a formation admission,
// jacod --node-name, an offline restore) and is shown by the CLI and
// written to logs, so every entry checks it with the same rule: an
// RFC 1123 host name.
package nodename

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// The limits of an RFC 1123 host name, in bytes.
const (
	MaxLen      = 253
	MaxLabelLen = 63
)

// Rule is the rule in words, for error messages and help text.
const Rule = "an RFC 1123 host name: labels of ASCII letters, digits and '-' " +
	"(not first or last), each 1 to 63 bytes, joined by '.', at most 253 bytes in all"

// ErrInvalid wraps every refusal of Check.
var ErrInvalid = errors.New("invalid node name")

// Check returns nil when name is a valid node name, else an error wrapping
// ErrInvalid that quotes the name (shortened: a name may be huge) and
// states the rule.
func Check(name string) error {
	if why := problem(name); why != "" {
		return fmt.Errorf("%w %s: %s; want %s", ErrInvalid, Quote(name), why, Rule)
	}
	return nil
}

func problem(name string) string {
	if name == "" {
		return "empty"
	}
	if len(name) > MaxLen {
		return fmt.Sprintf("%d bytes long", len(name))
	}
	for label := range strings.SplitSeq(name, ".") {
		switch {
		case label == "":
			return "an empty label"
		case len(label) > MaxLabelLen:
			return fmt.Sprintf("a label of %d bytes", len(label))
		case label[0] == '-' || label[len(label)-1] == '-':
			return fmt.Sprintf("label %q starts or ends with '-'", label)
		}
		for i := 0; i < len(label); i++ {
			if c := label[i]; !isLetterOrDigit(c) && c != '-' {
				return fmt.Sprintf("byte %q is not allowed", c)
			}
		}
	}
	return ""
}

func isLetterOrDigit(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
}

// quoteMax is how much of a refused name an error shows.
const quoteMax = 64

// Quote renders a name for a message: Go-quoted, so control characters
// show escaped, and cut after quoteMax bytes with its length.
func Quote(name string) string {
	if len(name) <= quoteMax {
		return strconv.Quote(name)
	}
	return fmt.Sprintf("%s… (%d bytes)", strconv.Quote(strings.ToValidUTF8(name[:quoteMax], "")), len(name))
}
