package raft

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"sync/atomic"
	"time"

	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"

	"github.com/jaco-project/jaco/api"
)

// Snapshots are taken off the Ready loop (docs/adr/0030): the loop
// freezes the applied state, a goroutine encodes, seals and writes it, and
// the loop, told it is done, records it in the WAL and compacts the log.
// Encoding a large store takes seconds; on the loop that would stop
// heartbeats and writes for as long, and the followers would elect.

// snapshotJob is a snapshot being written off the loop. done receives the
// outcome once; the loop owns the job until then.
type snapshotJob struct {
	meta raftpb.SnapshotMetadata
	// logBytes is the node's logBytes when the state was frozen: the
	// entries the snapshot covers.
	logBytes int
	started  time.Time
	done     chan snapshotResult
	// hurry ends the encoder's rests (encodeSnapshot): someone waits.
	hurry atomic.Bool
}

type snapshotResult struct {
	data []byte
	err  error
}

// maybeSnapshot starts a snapshot of the applied state when one is due
// (or at once when snapshotNow), unless one is being written already: the
// next Ready after it ends starts another if one is due again.
func (n *Node) maybeSnapshot() error {
	if n.snapshotting != nil {
		if n.snapshotNow {
			// A newcomer waits for the snapshot after this one.
			n.snapshotting.hurry.Store(true)
		}
		return nil
	}
	if !n.snapshotNow && !n.snapshotDue() {
		return nil
	}
	applied := n.applied.Load()
	urgent := n.snapshotNow
	n.snapshotNow = false
	term, err := n.mem.Term(applied)
	if err != nil {
		return fmt.Errorf("snapshot at %d: term: %w", applied, err)
	}
	cs := raftpb.ConfState{
		Voters:         slices.Clone(n.confState.Voters),
		Learners:       slices.Clone(n.confState.Learners),
		VotersOutgoing: slices.Clone(n.confState.VotersOutgoing),
		LearnersNext:   slices.Clone(n.confState.LearnersNext),
		AutoLeave:      n.confState.AutoLeave,
	}
	job := &snapshotJob{
		meta:     raftpb.SnapshotMetadata{Index: applied, Term: term, ConfState: cs},
		logBytes: n.logBytes,
		started:  time.Now(),
		done:     make(chan snapshotResult, 1),
	}
	// Taken for a newcomer (snapshotNow), who waits for it: no rests.
	job.hurry.Store(urgent)
	frozen := n.frozenState()
	n.snapshotting = job
	go func() {
		data, err := frozen(&job.hurry)
		if err == nil {
			err = n.disk.WriteSnapshotFile(raftpb.Snapshot{Data: data, Metadata: job.meta})
		}
		job.done <- snapshotResult{data: data, err: err}
	}()
	return nil
}

// weighedSnapshotBytes is the snapshot size from which snapshotDue also
// weighs the log against the snapshot. Smaller ones cost next to nothing
// and come every SnapshotInterval entries as configured. It was 16 MiB:
// at 8 000 small writes/s, snapshots of 1 to 16 MiB every 10 000 entries
// took 13 % of the leader's CPU (docs/adr/0030).
const weighedSnapshotBytes = 1 << 20

// snapshotDue reports whether SnapshotInterval entries have been applied
// since the newest snapshot and, once snapshots are large, whether those
// entries' bytes outweigh it. The second rule keeps the cost of snapshots
// in step with the writes: each costs about the store's size and comes
// only after as many bytes were written, so a large store is not
// re-encoded every SnapshotInterval small writes (600 000 objects every
// ten seconds at 1 000 writes/s). A log that outweighs both the snapshot
// and weighedSnapshotBytes makes one due however few its entries: big
// batches (500 tasks each) otherwise grew the log, held in memory and
// replayed at restart, to 64 MB in 400 entries with no snapshot at all.
// A restart thus replays at most about a snapshot's worth of log, or
// 1 MiB (docs/adr/0030).
//
// Once snapshots are large, the voters stagger them (docs/adr/0056): a
// member whose newest snapshot others hold at the same index (the first
// large one, which every voter takes at the same index, or one received
// from the leader) waits once for a log heavier by k/n of it, k being
// its rank by raft id among n voters. From then on every voter waits for
// as much log as its snapshot weighs, so the offsets last: in a store
// growing with its log (each taken when the store has about doubled)
// the voters' snapshots come more than a tenth of a snapshot's log apart,
// and in a store of steady size, one every snapshot's weight of log, at
// least a fifth of that apart (a third with three voters that took
// their offsets at that size). Writing one takes about a twentieth of
// its log's time (2.6 s for the 99 MB behind 59 s of writes at
// 15 000/s).
// Offsets taken at every snapshot (a quarter of it per rank) gave the
// voters periods that differ, and their snapshots met again every few
// rounds: two followers writing 99 MB each at once at 880 000 entries
// were the slowest writes of a 15 000/s run.
func (n *Node) snapshotDue() bool {
	need := n.snapshotBytes
	if n.staggerNext {
		need += int(float64(n.snapshotBytes) * n.stagger())
	}
	if n.logBytes >= max(need, weighedSnapshotBytes) {
		return true
	}
	if n.applied.Load()-n.snapshotIndex < n.cfg.SnapshotInterval {
		return false
	}
	return n.snapshotBytes < weighedSnapshotBytes
}

// stagger is this member's offset as a share of its snapshot: k/n for n
// voters, k of them with a lower raft id than this member's, less the
// leader's k when the newest snapshot came from the leader (so that the
// two part).
func (n *Node) stagger() float64 {
	voters := len(n.confState.Voters)
	if voters == 0 {
		return 0
	}
	k := n.voterRank(n.raftID)
	if n.staggerFrom != raft.None {
		k = (k - n.voterRank(n.staggerFrom) + voters) % voters
	}
	return float64(k) / float64(voters)
}

// voterRank is how many voters have a lower raft id than id.
func (n *Node) voterRank(id uint64) int {
	rank := 0
	for _, v := range n.confState.Voters {
		if v < id {
			rank++
		}
	}
	return rank
}

// snapshotDone finishes the job the loop was told of: the snapshot becomes
// the one raft serves to followers and the one a restart begins from, and
// the log behind it is compacted.
func (n *Node) snapshotDone(res snapshotResult) error {
	job := n.snapshotting
	n.snapshotting = nil
	if res.err != nil {
		return res.err
	}
	m := job.meta
	if _, err := n.mem.CreateSnapshot(m.Index, &m.ConfState, nil); err != nil { // data on disk only (snapsend.go)
		if errors.Is(err, raft.ErrSnapOutOfDate) {
			return nil // a newer one was installed meanwhile; cannot happen while jobs are awaited
		}
		return fmt.Errorf("create snapshot at %d: %w", m.Index, err)
	}
	if err := n.disk.RecordSnapshot(m); err != nil {
		return err
	}
	n.tookSnapshot(m.Index, len(res.data))
	n.metrics.snapshotDuration.Observe(time.Since(job.started).Seconds())
	n.metrics.snapshotBytes.Set(float64(len(res.data)))
	n.logBytes -= job.logBytes // what was applied while it was written stays counted
	if err := n.compactBehind(m.Index); err != nil {
		return err
	}
	n.cfg.Logger.Info("raft snapshot taken", "index", m.Index, "bytes", len(res.data), "took", time.Since(job.started).Round(time.Millisecond))
	return nil
}

// tookSnapshot records this member's own newest snapshot for
// snapshotDue. The first large one is at the index every voter takes its
// own at, so the next is staggered; those after keep the offset.
func (n *Node) tookSnapshot(index uint64, bytes int) {
	n.snapshotIndex = index
	n.staggerNext = n.snapshotBytes < weighedSnapshotBytes && bytes >= weighedSnapshotBytes
	n.staggerFrom = raft.None
	n.snapshotBytes = bytes
}

// restoredFrom records that the newest snapshot is lead's, restored here
// at lead's index: the next large one parts from lead's (snapshotDue).
func (n *Node) restoredFrom(lead uint64) {
	n.staggerNext, n.staggerFrom = true, lead
}

// keptLogBytes bounds the log kept in memory behind the newest snapshot
// for followers slightly behind: LogEntriesForSlowFollowers entries, but
// no more bytes than this. Creating a 100 000-replica service commits
// batches of 500 tasks, about 100 KB each: 500 of them held 50 MB of the
// leader's heap, for a follower that far behind, which
// the snapshot serves as well.
const keptLogBytes = 8 << 20

// compactBehind compacts the in-memory log behind a snapshot at index,
// keeping what keptFrom allows.
func (n *Node) compactBehind(index uint64) error {
	first, err := n.mem.FirstIndex()
	if err != nil {
		return fmt.Errorf("compact raft log: %w", err)
	}
	// The byte bound holds from the log's start too: a young cluster's
	// first snapshots come before 500 entries, some of them big batches.
	lo := first - 1
	if index > n.cfg.LogEntriesForSlowFollowers {
		lo = max(lo, index-n.cfg.LogEntriesForSlowFollowers)
	}
	if lo >= index {
		return nil
	}
	ents, err := n.mem.Entries(lo+1, index+1, math.MaxUint64)
	if err != nil {
		return fmt.Errorf("compact raft log: entries %d-%d: %w", lo+1, index, err)
	}
	if err := n.mem.Compact(keptFrom(lo, ents, keptLogBytes)); err != nil && !errors.Is(err, raft.ErrCompacted) {
		return fmt.Errorf("compact raft log: %w", err)
	}
	return nil
}

// keptFrom is the index to compact the log to so that, of ents (the
// entries after lo), those kept weigh no more than maxBytes: lo when all
// fit, else the index of the newest entry that does not, which goes with
// everything before it.
func keptFrom(lo uint64, ents []raftpb.Entry, maxBytes int) uint64 {
	size := 0
	for i := len(ents) - 1; i >= 0; i-- {
		if size += len(ents[i].Data); size > maxBytes {
			return ents[i].Index
		}
	}
	return lo
}

// awaitSnapshot waits for the snapshot being written, if any, and
// finishes it: done before anything else writes to the snapshot directory
// or rewrites the log (a leader's snapshot, Rekey, Close).
func (n *Node) awaitSnapshot() error {
	if n.snapshotting == nil {
		return nil
	}
	n.snapshotting.hurry.Store(true)
	return n.snapshotDone(<-n.snapshotting.done)
}

// snapshotDoneC is the running job's done channel, nil (never ready) when
// none runs.
func (n *Node) snapshotDoneC() <-chan snapshotResult {
	if n.snapshotting == nil {
		return nil
	}
	return n.snapshotting.done
}

// frozenState freezes the applied state, members and the blacklist of
// removed members now; the function returned, called once, encodes them.
// The encoding is not deterministic: each member encodes and reads
// back its own snapshots, and the order of map entries (labels) matters
// to nobody, while the deterministic encoder took 40 % longer on a store
// of 120 000 join tokens (90 ms against 64).
func (n *Node) frozenState() func(hurry *atomic.Bool) ([]byte, error) {
	store := n.cfg.Applier.Freeze()
	// The store grew by at most about the log since the last snapshot;
	// a log of updates outweighs the growth it made, hence the cap.
	sizeHint := n.snapshotBytes + min(n.logBytes, n.snapshotBytes+1<<20)
	members := cloneMembers(n.members.list())
	removed := cloneMembers(n.members.removedList())
	return func(hurry *atomic.Bool) ([]byte, error) {
		objs := store()
		// The lists hold every object the snapshot needs: the frozen
		// version goes now, not after a paced encoding of seconds, during
		// which it kept every tree node later writes replaced.
		store = nil
		return encodeSnapshot(objs, members, removed, hurry, sizeHint)
	}
}

func cloneMembers(ms []*api.RaftMember) []*api.RaftMember {
	out := make([]*api.RaftMember, len(ms))
	for i, m := range ms {
		out[i] = proto.CloneOf(m)
	}
	return out
}
