package main

import "testing"

func TestParseFault(t *testing.T) {
	for in, want := range map[string]fault{"kill": faultKill, "pause": faultPause} {
		if got, err := parseFault(in); err != nil || got != want {
			t.Errorf("parseFault(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, in := range []string{"", "stop", "KILL"} {
		if _, err := parseFault(in); err == nil {
			t.Errorf("parseFault(%q) took it", in)
		}
	}
}
