package agent

import (
	"slices"
	"testing"
)

func TestParseMemTotal(t *testing.T) {
	meminfo := []byte("MemFree:         1000 kB\nMemTotal:       16384 kB\n")
	if got := parseMemTotal(meminfo); got != 16384*1024 {
		t.Fatalf("parseMemTotal = %d", got)
	}
	if got := parseMemTotal([]byte("garbage")); got != 0 {
		t.Fatalf("parseMemTotal(garbage) = %d", got)
	}
}

func TestMergeManagers(t *testing.T) {
	got := mergeManagers([]string{"m2:7000", "m3:7000"}, []string{"m1:7000", "m2:7000"})
	if want := []string{"m2:7000", "m3:7000", "m1:7000"}; !slices.Equal(got, want) {
		t.Fatalf("mergeManagers = %v, want %v", got, want)
	}
}

func TestValidTaskID(t *testing.T) {
	for id, ok := range map[string]bool{"abc123": true, "": false, ".": false, "..": false, "a/b": false, `a\b`: false, "../x": false} {
		if err := validTaskID(id); (err == nil) != ok {
			t.Errorf("validTaskID(%q) = %v, want ok %v", id, err, ok)
		}
	}
}

func TestNewRefusesIncompleteConfig(t *testing.T) {
	full := Config{NodeID: "n", Dir: t.TempDir(), Dial: dialInsecure}
	for name, mutate := range map[string]func(*Config){
		"no node id": func(c *Config) { c.NodeID = "" },
		"no dir":     func(c *Config) { c.Dir = "" },
		"no dial":    func(c *Config) { c.Dial = nil },
	} {
		c := full
		mutate(&c)
		if _, err := New(c); err == nil {
			t.Errorf("%s: New succeeded", name)
		}
	}
	if _, err := New(full); err != nil {
		t.Fatalf("New(%+v): %v", full, err)
	}
}
