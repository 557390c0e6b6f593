package manager

import (
	"context"
	"time"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/api/reason"
)

// Removal probing: a member that was removed while it was down, or whose
// leader stopped talking to it before it saw its removal commit, hears
// nothing more — a nonvoter does not even campaign. So a member that has
// not heard from a leader for a while asks its peers whether it is still
// one of them; a peer that removed it answers node_removed
// (raft.Service.refuseRemoved).
const (
	probeInterval  = 2 * time.Second
	probeAfter     = 5 * time.Second
	probeCallLimit = 2 * time.Second
)

// probeRemoval asks the peers, while no leader is heard from, until ctx
// ends: the manager's stop, which also ends a call to a peer that does
// not answer (a paused or cut-off one) instead of waiting out its limit.
func (m *Manager) probeRemoval(ctx context.Context) {
	ticker := time.NewTicker(probeInterval)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-m.raft.Done():
			return
		case <-m.raft.MembersChanged():
			// Unrelated to removal: a member that moved or left is not
			// redialled at its old address, from the moment it is known.
			m.dropMovedConns()
			continue
		case <-ticker.C:
		}
		// And on the beat: a forwarded call that resolved the old address
		// just before the change may have opened a connection there after.
		m.dropMovedConns()
		if m.raft.SinceLeaderContact() < probeAfter || m.dial == nil {
			continue
		}
		for _, peer := range m.raft.Members() {
			if peer.RaftId == m.raft.RaftID() {
				continue
			}
			if m.askPeer(ctx, peer.Address) {
				m.markRemoved()
				return
			}
		}
	}
}

// askPeer reports whether the manager at addr says this one was removed.
func (m *Manager) askPeer(ctx context.Context, addr string) bool {
	conn, err := m.dial(addr)
	if err != nil {
		return false
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(ctx, probeCallLimit)
	defer cancel()
	_, err = api.NewRaftServiceClient(conn).ResolveAddress(ctx, &api.ResolveAddressRequest{RaftId: m.raft.RaftID()})
	return reason.Of(err) == reason.NodeRemoved
}
