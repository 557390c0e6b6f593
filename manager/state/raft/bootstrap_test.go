package raft

import "testing"

func TestUnusedRaftID(t *testing.T) {
	draws := []uint64{0, 5, 6, 7}
	draw := func() (uint64, error) { id := draws[0]; draws = draws[1:]; return id, nil }
	id, err := UnusedRaftID(draw, func(id uint64) bool { return id == 5 || id == 6 })
	if err != nil || id != 7 {
		t.Fatalf("UnusedRaftID = %d, %v; want 7 (0 never, 5 and 6 taken)", id, err)
	}
	if _, err := UnusedRaftID(func() (uint64, error) { return 5, nil }, func(uint64) bool { return true }); err == nil {
		t.Fatal("UnusedRaftID gave an id when every draw was taken")
	}
}
