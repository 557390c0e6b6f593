package nodename

import (
	"errors"
	"strings"
	"testing"
)

func TestCheckAcceptsHostNames(t *testing.T) {
	for _, name := range []string{
		"w1", "m", "jaco-0", "jaco-12", "node.example.com", "Worker-A", "10.0.0.1", "a-b-c",
		strings.Repeat("a", MaxLabelLen),
		strings.Repeat(strings.Repeat("a", 63)+".", 3) + strings.Repeat("b", 61), // 253 bytes
	} {
		if err := Check(name); err != nil {
			t.Errorf("Check(%q): %v, want accepted", name, err)
		}
	}
}

func TestCheckRefuses(t *testing.T) {
	for name, bad := range map[string]string{
		"empty":           "",
		"newline":         "w1\nw2",
		"escape sequence": "w\x1b[31mred\x1b[0m",
		"emoji":           "w😀",
		"space":           "w 1",
		"underscore":      "w_1",
		"slash":           "a/b",
		"leading dash":    "-w",
		"trailing dash":   "w-",
		"empty label":     "a..b",
		"trailing dot":    "w1.",
		"leading dot":     ".w1",
		"label over 63":   strings.Repeat("a", MaxLabelLen+1),
		"name over 253":   strings.Repeat(strings.Repeat("a", 63)+".", 3) + strings.Repeat("b", 62),
		"1 MiB":           strings.Repeat("a", 1<<20),
		"invalid utf-8":   "w\xff",
		"bidi override":   "w\u202e1",
		"nul":             "w\x00",
	} {
		err := Check(bad)
		if !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: Check: %v, want ErrInvalid", name, err)
			continue
		}
		if len(err.Error()) > 500 {
			t.Errorf("%s: the error is %d bytes long; it must not repeat a huge name", name, len(err.Error()))
		}
		if strings.ContainsAny(err.Error(), "\n\x1b\x00") {
			t.Errorf("%s: the error %q holds raw control characters", name, err)
		}
	}
}
