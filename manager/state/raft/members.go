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
	removed map[uint64]bool
}

func newMembership() *membership {
	return &membership{members: make(map[uint64]*api.RaftMember), removed: make(map[uint64]bool)}
}

func (m *membership) add(member *api.RaftMember) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.members[member.RaftId] = member
}

func (m *membership) remove(raftID uint64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.members, raftID)
	m.removed[raftID] = true
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
	return m.removed[raftID]
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

func (m *membership) removedIDs() []uint64 {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return slices.Sorted(maps.Keys(m.removed))
}

// reset replaces everything with a snapshot's view.
func (m *membership) reset(members []*api.RaftMember, removed []uint64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.members = make(map[uint64]*api.RaftMember, len(members))
	for _, mem := range members {
		m.members[mem.RaftId] = mem
	}
	m.removed = make(map[uint64]bool, len(removed))
	for _, id := range removed {
		m.removed[id] = true
	}
}
