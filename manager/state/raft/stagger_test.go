package raft

import (
	"fmt"
	"math"
	"testing"
)

// staggerSim steps three voters through the same entries, each deciding
// its snapshots by snapshotDue as the Ready loop does, and keeps the
// index and size of every large one each takes.
type staggerSim struct {
	voters []*Node
	taken  [][]staggerSnap
	// storeBytes is the store's encoded size at an index.
	storeBytes func(index uint64) int
}

type staggerSnap struct {
	index uint64
	bytes int
}

const simEntryBytes = 100

func newStaggerSim(ids []uint64, storeBytes func(uint64) int) *staggerSim {
	s := &staggerSim{storeBytes: storeBytes, taken: make([][]staggerSnap, len(ids))}
	for _, id := range ids {
		n := &Node{cfg: Config{SnapshotInterval: 10_000}, raftID: id}
		n.confState.Voters = ids
		s.voters = append(s.voters, n)
	}
	return s
}

// run applies entries up to last, 1 000 at a time; a snapshot takes no
// time.
func (s *staggerSim) run(from, last uint64) {
	for idx := from + 1000; idx <= last; idx += 1000 {
		for i, n := range s.voters {
			n.applied.Store(idx)
			n.logBytes += 1000 * simEntryBytes
			if n.snapshotDue() {
				b := s.storeBytes(idx)
				n.tookSnapshot(idx, b)
				n.logBytes = 0
				if b >= weighedSnapshotBytes {
					s.taken[i] = append(s.taken[i], staggerSnap{idx, b})
				}
			}
		}
	}
}

// meetings lists every two snapshots of 4 MiB or more of different
// voters taken within share of a snapshot's worth of log of each other
// (writing the 99 MB snapshot behind a 15 000/s run's tail took 2.6 s, a
// twentieth of its log's 59 s), from index after on. The first large
// snapshot, past 1 MiB and under 2, is taken by all at once by design
// (tens of milliseconds).
func (s *staggerSim) meetings(after uint64, share float64) []string {
	var out []string
	for a := range s.taken {
		for b := a + 1; b < len(s.taken); b++ {
			for _, x := range s.taken[a] {
				for _, y := range s.taken[b] {
					if x.index <= after || y.index <= after || min(x.bytes, y.bytes) < 4<<20 {
						continue
					}
					window := float64(max(x.bytes, y.bytes)) / simEntryBytes * share
					if math.Abs(float64(x.index)-float64(y.index)) < window {
						out = append(out, fmt.Sprintf("voters %d and %d at %d and %d", s.voters[a].raftID, s.voters[b].raftID, x.index, y.index))
					}
				}
			}
		}
	}
	return out
}

// TestVotersSnapshotsNeverMeet: three voters that start together never
// take large snapshots at once, in a store that grows with its log
// (every write a new object, as the rate benchmark's join tokens) over
// about fourteen rounds, or one that grows to 50 MiB and then keeps its
// size; nor after one of them falls behind and restores the leader's
// snapshot.
func TestVotersSnapshotsNeverMeet(t *testing.T) {
	ids := []uint64{7, 3, 11}
	// A token encodes in 87 % of its log entry's bytes (the rate
	// benchmark's: 110 and 126).
	growing := func(idx uint64) int { return int(idx) * simEntryBytes * 87 / 100 }
	steady := func(idx uint64) int { return min(growing(idx), 50<<20) } // grows to 50 MiB, then only updates
	for _, tc := range []struct {
		name  string
		store func(uint64) int
		// once past index after, no two snapshots within share of one's log
		after uint64
		share float64
	}{
		{"growing store", growing, 0, 0.1},
		{"steady store", steady, 0, 0.1},
		{"steady store, once steady", steady, 10_000_000, 0.2},
	} {
		s := newStaggerSim(ids, tc.store)
		s.run(0, 200_000_000)
		for i, ts := range s.taken {
			if len(ts) < 5 {
				t.Fatalf("%s: voter %d took %d large snapshots, want several", tc.name, ids[i], len(ts))
			}
		}
		if m := s.meetings(tc.after, tc.share); len(m) > 0 {
			t.Errorf("%s: snapshots met: %v", tc.name, m)
		}
	}

	// Voter 3 falls behind and restores leader 7's newest snapshot.
	s := newStaggerSim(ids, growing)
	s.run(0, 20_000_000)
	lead, behind := s.voters[0], s.voters[1]
	behind.snapshotIndex, behind.snapshotBytes = lead.snapshotIndex, lead.snapshotBytes
	behind.logBytes = lead.logBytes
	behind.restoredFrom(lead.raftID)
	s.taken[1] = nil
	s.run(20_000_000, 400_000_000)
	if len(s.taken[1]) < 3 {
		t.Fatalf("voter 3 took %d large snapshots after the restore, want several", len(s.taken[1]))
	}
	if m := s.meetings(20_000_000, 0.1); len(m) > 0 {
		t.Errorf("after a restore from the leader, snapshots met: %v", m)
	}
}
