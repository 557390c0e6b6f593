package rolemanager

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"

	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/quorum"
	"go.etcd.io/raft/v3/raftpb"
	"go.etcd.io/raft/v3/tracker"

	"github.com/jaco-project/jaco/api"
)

// fakeRaft is an in-memory raft group seen from member id: Promote and
// Demote apply to its configuration at once, as if committed and applied.
type fakeRaft struct {
	mu       sync.Mutex
	id       uint64
	lead     uint64
	term     uint64
	commit   uint64
	voters   map[uint64]bool
	learners map[uint64]bool
	nodeIDs  map[uint64]string // the member list
	progress map[uint64]tracker.Progress
	lagging  map[uint64]bool // members replicate skips
	joint    bool            // report a joint configuration

	changes     int   // applied promotions and demotions
	statusCalls int   // Status calls
	changeErr   error // returned by Promote and Demote when set
	block       bool  // Promote and Demote wait for ctx
	blocked     int   // calls that waited
}

// newFakeRaft returns a group whose only member, the leader, is nodeID.
func newFakeRaft(nodeID string) *fakeRaft {
	f := &fakeRaft{
		id: raftIDOf(nodeID), term: 1, commit: 1,
		voters: map[uint64]bool{}, learners: map[uint64]bool{},
		nodeIDs: map[uint64]string{}, progress: map[uint64]tracker.Progress{}, lagging: map[uint64]bool{},
	}
	f.lead = f.id
	f.voters[f.id] = true
	f.nodeIDs[f.id] = nodeID
	f.progress[f.id] = tracker.Progress{Match: f.commit, RecentActive: true}
	return f
}

// raftIDOf gives node ids raft ids whose order is unrelated to theirs.
func raftIDOf(nodeID string) uint64 {
	var h uint64 = 14695981039346656037
	for _, c := range []byte(nodeID) {
		h = (h ^ uint64(c)) * 1099511628211
	}
	return h
}

func (f *fakeRaft) RaftID() uint64 { return f.id }

func (f *fakeRaft) Status() raft.Status {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.statusCalls++
	st := raft.Status{
		BasicStatus: raft.BasicStatus{
			ID:        f.id,
			HardState: raftpb.HardState{Term: f.term, Commit: f.commit},
			SoftState: raft.SoftState{Lead: f.lead, RaftState: raft.StateFollower},
		},
		Config: tracker.Config{
			Voters:   quorum.JointConfig{quorum.MajorityConfig{}, nil},
			Learners: map[uint64]struct{}{},
		},
	}
	for id := range f.voters {
		st.Config.Voters[0][id] = struct{}{}
	}
	for id := range f.learners {
		st.Config.Learners[id] = struct{}{}
	}
	if f.joint {
		st.Config.Voters[1] = quorum.MajorityConfig{f.id: {}}
	}
	if f.lead == f.id {
		st.RaftState = raft.StateLeader
		st.Progress = maps.Clone(f.progress)
	}
	return st
}

func (f *fakeRaft) Members() []*api.RaftMember {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []*api.RaftMember
	for _, id := range slices.Sorted(maps.Keys(f.nodeIDs)) {
		out = append(out, &api.RaftMember{RaftId: id, NodeId: f.nodeIDs[id]})
	}
	return out
}

func (f *fakeRaft) Promote(ctx context.Context, raftID uint64) error {
	return f.change(ctx, raftID, true)
}

func (f *fakeRaft) Demote(ctx context.Context, raftID uint64) error {
	return f.change(ctx, raftID, false)
}

func (f *fakeRaft) TransferLeadership(_ context.Context, to uint64) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.voters[to] {
		return fmt.Errorf("fake raft: %x is not a voter", to)
	}
	f.lead = to
	f.term++
	return nil
}

func (f *fakeRaft) Remove(_ context.Context, raftID uint64) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.nodeIDs[raftID]; !ok {
		return fmt.Errorf("fake raft: no member %x", raftID)
	}
	if f.voters[raftID] {
		// The product never removes a voter: RemoveMember demotes first.
		return fmt.Errorf("fake raft: member %x is still a voter", raftID)
	}
	delete(f.learners, raftID)
	delete(f.nodeIDs, raftID)
	delete(f.progress, raftID)
	f.changes++
	f.commit++
	f.replicateLocked()
	return nil
}

func (f *fakeRaft) change(ctx context.Context, raftID uint64, voter bool) error {
	f.mu.Lock()
	block, err := f.block, f.changeErr
	if block {
		f.blocked++
	}
	f.mu.Unlock()
	if block {
		<-ctx.Done()
		return ctx.Err()
	}
	if err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if voter && !f.learners[raftID] || !voter && !f.voters[raftID] {
		return fmt.Errorf("fake raft: member %x cannot change to voter=%v", raftID, voter)
	}
	delete(f.voters, raftID)
	delete(f.learners, raftID)
	if voter {
		f.voters[raftID] = true
	} else {
		f.learners[raftID] = true
	}
	f.changes++
	f.commit++
	f.replicateLocked()
	return nil
}

// join adds nodeID as a learner (the conf change commits one entry) and
// returns its raft id. It has not replicated yet.
func (f *fakeRaft) join(nodeID string) uint64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	id := raftIDOf(nodeID)
	f.learners[id] = true
	f.nodeIDs[id] = nodeID
	f.commit++
	f.progress[f.id] = tracker.Progress{Match: f.commit, RecentActive: true}
	f.progress[id] = tracker.Progress{RecentActive: true}
	return id
}

// replicate brings every member but the lagging ones up to the commit
// index. A promotion or demotion does so too: its entry reaches the
// healthy members as it commits.
func (f *fakeRaft) replicate() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.replicateLocked()
}

func (f *fakeRaft) replicateLocked() {
	for id := range f.progress {
		if !f.lagging[id] {
			f.progress[id] = tracker.Progress{Match: f.commit, RecentActive: true}
		}
	}
}

func (f *fakeRaft) set(fn func(f *fakeRaft)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fn(f)
}

// voterNames returns the voters' node ids, sorted.
func (f *fakeRaft) voterNames() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for id := range f.voters {
		out = append(out, f.nodeIDs[id])
	}
	slices.Sort(out)
	return out
}

func (f *fakeRaft) stats() (changes, statusCalls int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.changes, f.statusCalls
}
