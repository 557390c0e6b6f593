package manager

import (
	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/ca/token"
	"github.com/jaco-project/jaco/manager/carotation"
	"github.com/jaco-project/jaco/manager/state/store"
)

// Members describes the raft members as this manager sees them, and the
// node id of the leader ("" when there is none). Reachability is known
// only on the leader (raft progress); elsewhere only the leader and this
// member are known to be up.
func (m *Manager) Members() (members []*api.Member, leaderNodeID string) {
	st := m.raft.Status()
	lead := st.Lead
	isLeader := lead == m.raft.RaftID()
	var nodes map[uint64]*api.Node
	m.store.View(func(tx store.ReadTx) {
		nodes = make(map[uint64]*api.Node)
		for _, n := range tx.ListNodes() {
			if n.RaftId != 0 {
				nodes[n.RaftId] = n
			}
		}
	})
	for _, rm := range m.raft.Members() {
		mem := &api.Member{NodeId: rm.NodeId, Address: rm.Address, RaftId: rm.RaftId, Leader: rm.RaftId == lead}
		if n, ok := nodes[rm.RaftId]; ok {
			mem.Hostname = n.Hostname
		}
		switch {
		case rm.RaftId == m.raft.RaftID() || mem.Leader:
			mem.Status = api.MemberStatus_MEMBER_STATUS_READY
		case isLeader:
			mem.Status = api.MemberStatus_MEMBER_STATUS_UNREACHABLE
			if pr, ok := st.Progress[rm.RaftId]; ok && pr.RecentActive {
				mem.Status = api.MemberStatus_MEMBER_STATUS_READY
			}
		}
		mem.Suffrage = api.Suffrage_SUFFRAGE_NONVOTER
		if _, ok := st.Config.Voters.IDs()[rm.RaftId]; ok {
			mem.Suffrage = api.Suffrage_SUFFRAGE_VOTER
		}
		if mem.Leader {
			leaderNodeID = rm.NodeId
		}
		members = append(members, mem)
	}
	return members, leaderNodeID
}

// CAStatus is the progress of a CA rotation under way (nil when none
// is), and the fingerprint of the CA that signs now, as this manager's
// store has them (docs/adr/0041).
func (m *Manager) CAStatus() (*api.CARotationProgress, string) {
	var c *api.Cluster
	var nodes []*api.Node
	m.store.View(func(tx store.ReadTx) {
		c = tx.ClusterShared()
		if c.GetCaRotation() != nil { // the progress counts nodes only then
			nodes = tx.ListNodes()
		}
	})
	if c == nil {
		return nil, ""
	}
	fp, _ := token.Fingerprint(c.CaCertPem)
	return carotation.Progress(c, nodes), fp
}
