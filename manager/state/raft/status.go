package raft

import (
	"context"
	"fmt"
	"time"

	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"

	"github.com/jaco-project/jaco/api"
)

// RaftID is this member's raft id.
func (n *Node) RaftID() uint64 { return n.raftID }

// NodeID is the node id recorded in this member's WAL.
func (n *Node) NodeID() string { return n.nodeID }

// ClusterID is the cluster id recorded in this member's WAL.
func (n *Node) ClusterID() string { return n.clusterID }

func (n *Node) setLeader(lead uint64) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if lead == n.leader {
		return
	}
	n.leader = lead
	if lead == raft.None {
		n.leaderlessSince = time.Now()
	} else {
		n.leaderlessSince = time.Time{}
		n.metrics.leaderChanges.Inc()
	}
	close(n.leaderChanged)
	n.leaderChanged = make(chan struct{})
}

// Leader returns the raft id of the current leader, 0 when there is none,
// and a channel closed at the next change.
func (n *Node) Leader() (uint64, <-chan struct{}) {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.leader, n.leaderChanged
}

// LeaderlessFor is how long this member has been without a leader; 0
// while it has one.
func (n *Node) LeaderlessFor() time.Duration {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.leaderlessSince.IsZero() {
		return 0
	}
	return time.Since(n.leaderlessSince)
}

// TransferLeadership hands leadership to the voter to and returns once
// this member no longer leads. raft abandons a transfer the target cannot
// act on yet (it still has a conf change to apply, say, as right after its
// promotion) after an election timeout, so the transfer is asked again
// until it takes or ctx ends.
func (n *Node) TransferLeadership(ctx context.Context, to uint64) error {
	if !n.IsLeader() {
		return ErrNotLeader
	}
	attempt := 2 * time.Duration(n.cfg.ElectionTick) * n.cfg.TickInterval
	for n.IsLeader() {
		n.rn.TransferLeadership(ctx, n.raftID, to)
		if err := n.waitNotLeader(ctx, attempt); err != nil {
			return fmt.Errorf("transfer leadership to %x: %w", to, err)
		}
	}
	return nil
}

// waitNotLeader returns once this member stops leading or d has passed.
func (n *Node) waitNotLeader(ctx context.Context, d time.Duration) error {
	timer := time.NewTimer(d)
	defer timer.Stop()
	for {
		lead, changed := n.Leader()
		if lead != n.raftID {
			return nil
		}
		select {
		case <-changed:
		case <-timer.C:
			return nil
		case <-n.done:
			return ErrStopped
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// IsLeader reports whether this member leads.
func (n *Node) IsLeader() bool {
	lead, _ := n.Leader()
	return lead == n.raftID
}

// WaitForLeader returns once some member leads, with its raft id.
func (n *Node) WaitForLeader(ctx context.Context) (uint64, error) {
	for {
		lead, changed := n.Leader()
		if lead != raft.None {
			return lead, nil
		}
		select {
		case <-changed:
		case <-n.done:
			return 0, ErrStopped
		case <-ctx.Done():
			return 0, fmt.Errorf("wait for a raft leader: %w", ctx.Err())
		}
	}
}

// Members returns the raft members, sorted by raft id.
func (n *Node) Members() []*api.RaftMember { return n.members.list() }

// MembersChanged returns a channel closed when the member list next
// changes (a member added, moved or removed): read Members again then.
func (n *Node) MembersChanged() <-chan struct{} { return n.members.watch() }

// ResolveAddress returns the address this member knows for raftID.
func (n *Node) ResolveAddress(raftID uint64) (string, bool) {
	m, ok := n.members.get(raftID)
	if !ok {
		return "", false
	}
	return m.Address, true
}

// IsVoter reports whether raftID is a voter as of the last applied
// configuration, as seen by raft.
func (n *Node) IsVoter(raftID uint64) bool {
	st := n.rn.Status()
	_, ok := st.Config.Voters.IDs()[raftID]
	return ok
}

// Status is raft's view of the group; progress is known only on the leader.
func (n *Node) Status() raft.Status { return n.rn.Status() }

// SinceLeaderContact is how long ago this member last heard from a
// leader: 0 while it leads itself. A member removed while away hears from
// none — a nonvoter keeps its old leader in view forever — so this, not
// LeaderlessFor, says when to ask whether it is still a member.
func (n *Node) SinceLeaderContact() time.Duration {
	if n.IsLeader() {
		return 0
	}
	return time.Since(time.Unix(0, n.leaderContact.Load()))
}

// Step delivers a message from another member. Messages from removed
// members are refused.
func (n *Node) Step(ctx context.Context, m raftpb.Message) error {
	if n.members.isRemoved(m.From) {
		return ErrMemberRemoved
	}
	if lead, _ := n.Leader(); m.From == lead || m.Type == raftpb.MsgApp || m.Type == raftpb.MsgHeartbeat || m.Type == raftpb.MsgSnap {
		n.leaderContact.Store(time.Now().UnixNano())
	}
	detail, err := n.leaderCountsLost(m)
	if err != nil {
		return err
	}
	if detail != "" {
		return n.lostEntries(detail)
	}
	if err := n.rn.Step(ctx, m); err != nil {
		return fmt.Errorf("step raft message from %x: %w", m.From, err)
	}
	return nil
}

// ReportUnreachable tells raft a message to raftID could not be delivered,
// so the leader probes that follower instead of streaming to it.
func (n *Node) ReportUnreachable(raftID uint64) { n.rn.ReportUnreachable(raftID) }

// ReportSnapshot tells raft whether a snapshot sent to raftID arrived.
func (n *Node) ReportSnapshot(raftID uint64, status raft.SnapshotStatus) {
	n.rn.ReportSnapshot(raftID, status)
}

// IsRemoved reports whether raftID was removed from the group for good.
func (n *Node) IsRemoved(raftID uint64) bool { return n.members.isRemoved(raftID) }

// IsRemovedNode reports whether nodeID belonged to a member removed for
// good that has not come back under a new raft id.
func (n *Node) IsRemovedNode(nodeID string) bool { return n.members.isRemovedNode(nodeID) }
