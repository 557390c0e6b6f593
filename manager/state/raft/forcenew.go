package raft

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/internal/durable"
	"github.com/jaco-project/jaco/manager/encryption"
	"github.com/jaco-project/jaco/manager/state/raft/storage"
)

// ErrNotAVoter is returned by ForceNewCluster when this member is not in
// the configuration its own log holds: it has nothing to recover from.
var ErrNotAVoter = errors.New("this member is not in the raft configuration it holds")

// ForceNewMarker is the file, in a rewritten state dir, that records a
// forced new cluster. While it is there ForceNewCluster does nothing: the
// flag is one-shot even when left on.
const ForceNewMarker = "force-new-cluster"

// forcedDir is where ForceNewCluster builds the new state; a swap cut
// between its two renames leaves the state only there.
func forcedDir(stateDir string) string { return stateDir + ".forced" }

// HasStateToForce reports whether stateDir holds raft state that
// ForceNewCluster can work on: a log, or the new state of a swap cut
// short.
func HasStateToForce(stateDir string) bool {
	return storage.Exists(stateDir) || storage.Exists(forcedDir(stateDir))
}

// Forced describes what ForceNewCluster did.
type Forced struct {
	// Skipped says why nothing was rewritten ("" when it was).
	Skipped string
	// Self is this member, now the sole voter.
	Self *api.RaftMember
	// Index and Term are the last entry of the log, now committed.
	Index, Term uint64
	// Adopted is how many of those entries lay past the commit index the
	// member had recorded. A follower learns the commit index after the
	// leader, so they may have been acknowledged to clients; raft would
	// commit them too had this member won an election. Kept, never dropped.
	Adopted int
	// Blacklisted are the other members, removed for good.
	Blacklisted []*api.RaftMember
	// OldDir is where the previous state dir was kept.
	OldDir string
}

// ForceNewCluster rewrites the raft state in stateDir, in place, as the
// state of a single-voter cluster of this member, for a majority lost for
// good. The store is rebuilt into applier (a fresh, empty one) from the
// newest snapshot and every entry of the log after it, including those
// past the recorded commit index (see Forced.Adopted). The new state is a
// snapshot at the last index whose only voter is this
// member (same raft id, node id and address) and whose removed list holds
// every other member, so their messages are refused from now on.
//
// The old state dir is kept as stateDir.old-<time>, never deleted. The
// swap is two renames; the new state is complete before the first. A
// state dir that already has the marker, or whose only voter is already
// this member, is left as it is.
func ForceNewCluster(stateDir string, sealer *encryption.Sealer, applier Applier, now time.Time) (*Forced, error) {
	staged := forcedDir(stateDir)
	if !storage.Exists(stateDir) && storage.Exists(staged) {
		// A swap cut between its renames: the staged state is whole.
		if err := os.Rename(staged, stateDir); err != nil {
			return nil, fmt.Errorf("finish interrupted force-new-cluster: %w", err)
		}
	}
	if _, err := os.Stat(filepath.Join(stateDir, ForceNewMarker)); err == nil {
		return &Forced{Skipped: "the state was already forced (remove " + ForceNewMarker + " from the raft dir to force again)"}, nil
	}
	r, err := replayLog(stateDir, sealer, applier)
	if err != nil {
		return nil, err
	}
	f := &Forced{Self: r.self, Index: r.index, Term: r.term, Adopted: r.adopted}
	for _, m := range r.members.list() {
		if m.RaftId != r.self.RaftId {
			f.Blacklisted = append(f.Blacklisted, m)
		}
	}
	if len(f.Blacklisted) == 0 {
		f.Skipped = "this member is already the sole voter"
		return f, nil
	}
	store, err := applier.Freeze()().Decoded()
	if err != nil {
		return nil, fmt.Errorf("force new cluster: %w", err)
	}
	snap := &api.RaftSnapshot{
		Store:          store,
		Members:        []*api.RaftMember{r.self},
		RemovedMembers: append(r.members.removedList(), f.Blacklisted...),
	}
	if err := os.RemoveAll(staged); err != nil {
		return nil, fmt.Errorf("clear %s: %w", staged, err)
	}
	if err := WriteRestored(staged, sealer, r.clusterID, r.self, r.term, r.index, snap); err != nil {
		return nil, fmt.Errorf("force new cluster: %w", err)
	}
	marker := fmt.Sprintf("forced at %s: index %d term %d, sole voter %x\n", now.UTC().Format(time.RFC3339), r.index, r.term, r.self.RaftId)
	if err := durable.WriteFile(filepath.Join(staged, ForceNewMarker), []byte(marker), 0o600); err != nil {
		return nil, fmt.Errorf("force new cluster: %w", err)
	}
	f.OldDir = fmt.Sprintf("%s.old-%s", stateDir, now.UTC().Format("20060102T150405Z"))
	if err := os.Rename(stateDir, f.OldDir); err != nil {
		return nil, fmt.Errorf("keep old raft state: %w", err)
	}
	if err := os.Rename(staged, stateDir); err != nil {
		return nil, fmt.Errorf("install forced raft state (the old one is in %s, the new one in %s): %w", f.OldDir, staged, err)
	}
	if err := durable.SyncDir(filepath.Dir(stateDir)); err != nil {
		return nil, err
	}
	return f, nil
}

// replayed is a member's state at the end of its log.
type replayed struct {
	clusterID   string
	self        *api.RaftMember
	members     *membership
	index, term uint64
	adopted     int
}

// replayLog reads stateDir and applies its snapshot and every entry after
// it to applier, tracking the membership as the member would.
func replayLog(stateDir string, sealer *encryption.Sealer, applier Applier) (*replayed, error) {
	disk, st, err := storage.Open(stateDir, sealer, storage.Options{})
	if err != nil {
		return nil, fmt.Errorf("open raft state: %w", err)
	}
	if err := disk.Close(); err != nil {
		return nil, err
	}
	meta, err := decodeWALMetadata(stateDir, st.Metadata)
	if err != nil {
		return nil, err
	}
	r := &replayed{clusterID: meta.ClusterId, members: newMembership()}
	if !raft.IsEmptySnap(st.Snapshot) {
		rs, err := decodeSnapshot(st.Snapshot.Data)
		if err != nil {
			return nil, fmt.Errorf("snapshot %d: %w", st.Snapshot.Metadata.Index, err)
		}
		if err := applier.Restore(rs.Store, st.Snapshot.Metadata.Index); err != nil {
			return nil, fmt.Errorf("restore store from snapshot %d: %w", st.Snapshot.Metadata.Index, err)
		}
		r.members.reset(rs.Members, rs.RemovedMembers)
		r.index, r.term = st.Snapshot.Metadata.Index, st.Snapshot.Metadata.Term
	}
	commit := st.HardState.Commit
	for _, e := range st.Entries {
		if e.Index > commit {
			r.adopted++
		}
		if e.Index <= r.index {
			continue
		}
		if err := replayEntry(applier, r.members, e); err != nil {
			return nil, err
		}
		r.index, r.term = e.Index, e.Term
	}
	self, ok := r.members.get(meta.RaftId)
	if !ok || r.index == 0 {
		return nil, fmt.Errorf("%w: raft id %x at index %d", ErrNotAVoter, meta.RaftId, r.index)
	}
	r.self = self
	return r, nil
}

// replayEntry applies one entry offline: a batch to the store,
// a conf change to the member list. A batch the store rejects is rejected
// on every member alike, so it is skipped here too.
func replayEntry(applier Applier, members *membership, e raftpb.Entry) error {
	switch e.Type {
	case raftpb.EntryNormal:
		if len(e.Data) == 0 {
			return nil
		}
		var req api.InternalRaftRequest
		if err := proto.Unmarshal(e.Data, &req); err != nil {
			return fmt.Errorf("decode entry %d: %w", e.Index, err)
		}
		_ = applier.ApplyHeld(e.Index, &req)
		applier.Publish()
	case raftpb.EntryConfChange, raftpb.EntryConfChangeV2:
		cc, err := decodeConfChange(e)
		if err != nil {
			return err
		}
		added, removed, err := memberChanges(cc)
		if err != nil {
			return fmt.Errorf("conf change %d: %w", e.Index, err)
		}
		for _, m := range added {
			members.add(m)
		}
		for _, id := range removed {
			members.remove(id)
		}
	}
	return nil
}
