package raft

import (
	"maps"
	"slices"
	"sync"

	"github.com/jaco-project/jaco/api"
)

// membership is the member list as of the last applied conf change, and
// the raft ids removed for good. The Ready loop writes it; RPC handlers
// read it.
type membership struct {
	mu      sync.RWMutex
	members map[uint64]*api.RaftMember
	// removed maps each removed raft id to the member it was (node id
	// and address as last known; just the id if it was never known here).
	removed map[uint64]*api.RaftMember
	// changed is closed, and replaced, by every change.
	changed chan struct{}
}

func newMembership() *membership {
	return &membership{members: make(map[uint64]*api.RaftMember), removed: make(map[uint64]*api.RaftMember), changed: make(chan struct{})}
}

// changedLocked wakes whoever waits on the list as it was; mu is held.
func (m *membership) changedLocked() {
	close(m.changed)
	m.changed = make(chan struct{})
}

// watch returns a channel closed at the next change.
func (m *membership) watch() <-chan struct{} {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.changed
}

func (m *membership) add(member *api.RaftMember) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.members[member.RaftId] = member
	m.changedLocked()
}

func (m *membership) remove(raftID uint64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	defer m.changedLocked()
	gone, ok := m.members[raftID]
	if !ok {
		gone = &api.RaftMember{RaftId: raftID}
	}
	delete(m.members, raftID)
	m.removed[raftID] = gone
}

func (m *membership) get(raftID uint64) (*api.RaftMember, bool) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	mem, ok := m.members[raftID]
	return mem, ok
}

func (m *membership) isRemoved(raftID uint64) bool {
	m.mu.RLock()
	defer m.mu.RUnlock()
	_, ok := m.removed[raftID]
	return ok
}

// isRemovedNode reports whether nodeID was a member that was removed and
// is not a member again (a node promoted back gets a new raft id).
func (m *membership) isRemovedNode(nodeID string) bool {
	m.mu.RLock()
	defer m.mu.RUnlock()
	for _, mem := range m.members {
		if mem.NodeId == nodeID {
			return false
		}
	}
	for _, gone := range m.removed {
		if gone.NodeId == nodeID {
			return true
		}
	}
	return false
}

// speaksFor reports whether a caller holding nodeID's certificate may send
// raft messages from raftID: not when raftID is another node's member, nor
// when nodeID's member has another raft id. An id known to neither side (a
// member this one has not learnt of yet) passes; raft itself weighs it.
func (m *membership) speaksFor(nodeID string, raftID uint64) bool {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if mem, ok := m.members[raftID]; ok && mem.NodeId != "" {
		return mem.NodeId == nodeID
	}
	for _, mem := range m.members {
		if mem.NodeId == nodeID && mem.RaftId != raftID {
			return false
		}
	}
	return true
}

// list returns the members sorted by raft id.
func (m *membership) list() []*api.RaftMember {
	m.mu.RLock()
	defer m.mu.RUnlock()
	ids := slices.Sorted(maps.Keys(m.members))
	out := make([]*api.RaftMember, len(ids))
	for i, id := range ids {
		out[i] = m.members[id]
	}
	return out
}

// removedList returns the removed members, sorted by raft id.
func (m *membership) removedList() []*api.RaftMember {
	m.mu.RLock()
	defer m.mu.RUnlock()
	ids := slices.Sorted(maps.Keys(m.removed))
	out := make([]*api.RaftMember, len(ids))
	for i, id := range ids {
		out[i] = m.removed[id]
	}
	return out
}

// reset replaces everything with a snapshot's view.
func (m *membership) reset(members, removed []*api.RaftMember) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.members = make(map[uint64]*api.RaftMember, len(members))
	for _, mem := range members {
		m.members[mem.RaftId] = mem
	}
	m.removed = make(map[uint64]*api.RaftMember, len(removed))
	for _, gone := range removed {
		m.removed[gone.RaftId] = gone
	}
	m.changedLocked()
}
