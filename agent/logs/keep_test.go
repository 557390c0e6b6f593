package logs

import (
	"fmt"
	"os"
	"testing"
	"time"
)

// keptLog gives replica id a kept log, as a collector would.
func keptLog(t *testing.T, s *Store, id string) {
	t.Helper()
	if err := os.MkdirAll(s.keptDir(), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{s.Path(id), s.Path(id) + ".1"} {
		if err := os.WriteFile(p, []byte("2026-01-02T03:04:05Z "+id+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

func hasLog(s *Store, id string) bool {
	_, err := os.Stat(s.Path(id))
	return err == nil
}

// retire retires replicas in order, each a nanosecond after the last.
func retire(t *testing.T, s *Store, clock *time.Time, service string, slot uint64, ids ...string) {
	t.Helper()
	for _, id := range ids {
		keptLog(t, s, id)
		*clock = clock.Add(time.Nanosecond)
		if err := s.Retire(id, service, slot); err != nil {
			t.Fatalf("Retire(%s): %v", id, err)
		}
	}
}

// TestRetireKeepsTheLastPerSlot: a slot keeps the logs of its last Keep
// ended replicas; older ones are deleted with their rotated part; other
// slots are left alone.
func TestRetireKeepsTheLastPerSlot(t *testing.T) {
	s := NewStore(t.TempDir())
	clock := time.Unix(1000, 0)
	s.Now = func() time.Time { return clock }
	var slot1 []string
	for i := range 7 {
		slot1 = append(slot1, fmt.Sprintf("a%d", i))
	}
	retire(t, s, &clock, "svc", 2, "b0")
	retire(t, s, &clock, "svc", 1, slot1...)
	retire(t, s, &clock, "other", 1, "c0")
	for i, id := range slot1 {
		if want := i >= 2; hasLog(s, id) != want {
			t.Errorf("log of %s (ended %d of 7 in its slot) kept = %v, want %v", id, i+1, !want, want)
		}
		if _, err := os.Stat(s.Path(id) + ".1"); i < 2 && !os.IsNotExist(err) {
			t.Errorf("rotated log of %s: %v, want it deleted", id, err)
		}
	}
	if !hasLog(s, "b0") || !hasLog(s, "c0") {
		t.Error("logs of other slots were deleted")
	}
}

// TestRetireBoundsTheNode: past MaxKept ended replicas on the node, the
// oldest go whatever their slot (removed services' slots never fill).
func TestRetireBoundsTheNode(t *testing.T) {
	s := NewStore(t.TempDir())
	s.MaxKept = 3
	clock := time.Unix(1000, 0)
	s.Now = func() time.Time { return clock }
	for i := range 5 {
		retire(t, s, &clock, fmt.Sprintf("svc%d", i), 1, fmt.Sprintf("r%d", i))
	}
	for i := range 5 {
		if want := i >= 2; hasLog(s, fmt.Sprintf("r%d", i)) != want {
			t.Errorf("log of r%d kept = %v, want %v", i, !want, want)
		}
	}
	dirs, err := os.ReadDir(s.endedDir())
	if err != nil || len(dirs) != 3 {
		t.Errorf("ended records: %d slots (%v), want the 3 with a kept log", len(dirs), err)
	}
}

// TestRetireWithoutLog: a replica that left no kept log (it was rejected
// before it ran) is not recorded, and its stray files go.
func TestRetireWithoutLog(t *testing.T) {
	s := NewStore(t.TempDir())
	if err := s.Retire("r1", "svc", 1); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(s.endedDir()); !os.IsNotExist(err) {
		t.Fatalf("ended dir: %v, want none", err)
	}
	if err := s.Retire("../x", "svc", 1); err == nil {
		t.Fatal("Retire of a path-like id succeeded")
	}
}
