package raft

import (
	"fmt"

	"go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"

	"github.com/jaco-project/jaco/api"
)

// heldOutcome is the applier's verdict on a proposal whose entry is
// applied but not yet published: its proposer hears it after Publish.
type heldOutcome struct {
	id  uint64
	err error
}

// applier is the goroutine applying a Ready's committed entries while
// the Ready loop persists that Ready (overlapApply), the loop handing it
// the entries and waiting for its result. One for the member's life
// rather than one a Ready: a fresh goroutine grew its stack through the
// apply every time (runtime.newstack, 3 % of a follower's CPU at 6 000
// writes/s; docs/bench/cluster.md).
type applier struct {
	work    chan []raftpb.Entry
	results chan error
	done    chan struct{}
}

// start runs apply on every batch of entries sent to a.work until stop.
func (a *applier) start(apply func([]raftpb.Entry) error) {
	// A result waits in results for the loop, so the applier goes back to
	// waiting for work at once instead of for the loop to take it.
	a.work, a.results, a.done = make(chan []raftpb.Entry), make(chan error, 1), make(chan struct{})
	go func() {
		defer close(a.done)
		for ents := range a.work {
			a.results <- apply(ents)
		}
	}()
}

// stop ends the goroutine, which holds no batch: the loop waits for each
// result before it goes on.
func (a *applier) stop() {
	close(a.work)
	<-a.done
}

// applyCommitted applies a Ready's committed entries in log order, then
// publishes them. It runs on the Ready loop or, while the loop persists,
// on the applier, which the loop waits for (overlapApply); either way
// nothing else touches what applying changes (the held outcomes, the
// store's held version) meanwhile.
func (n *Node) applyCommitted(ents []raftpb.Entry) error {
	for _, e := range ents {
		if err := n.applyEntry(e); err != nil {
			return err
		}
	}
	n.publishApplied()
	return nil
}

// replayCommitted applies, while the member opens, the entries its log
// holds as committed past the snapshot, up to the first conf change (raft
// must apply that one itself); raft, restarted from Config.Applied, hands
// the Ready loop only the rest. Done here, before the node serves, the
// replay does not compete with every node reconnecting at once; through
// the Ready loop it took 2.3 s of CPU among 5 000 TLS handshakes, and the
// restarted manager led 8 to 14 s after its start
// (docs/bench/largestore.md, "Restarts with 5 000 nodes").
// The entries are decoded ahead, on every core (decodeAhead).
func (n *Node) replayCommitted(ents []raftpb.Entry, commit uint64) error {
	// ents follow the snapshot with no gap: the in-memory log took them.
	committed := 0
	for committed < len(ents) && ents[committed].Index <= commit {
		committed++
	}
	ents = ents[:plainWrites(ents[:committed])]
	ahead := decodeAhead(ents)
	defer ahead.stop()
	for i, e := range ents {
		req, err := ahead.request(i)
		if err != nil {
			return err
		}
		if err := n.applyDecoded(e, req); err != nil {
			return err
		}
	}
	n.publishApplied()
	return nil
}

// plainWrites is how many of ents, from the first, are plain writes: no
// conf change, which raft must apply itself, and whose peers and voters
// what runs beside the apply must already see.
func plainWrites(ents []raftpb.Entry) int {
	for i, e := range ents {
		if e.Type != raftpb.EntryNormal {
			return i
		}
	}
	return len(ents)
}

// applyEntry applies one committed entry. Errors returned here are fatal
// to the member (an entry it cannot decode); a store's rejection of a batch
// is a normal outcome handed to the proposer, after publishApplied.
func (n *Node) applyEntry(e raftpb.Entry) error { return n.applyDecoded(e, nil) }

// applyDecoded is applyEntry of an entry whose request, when req is not
// nil, is decoded already.
func (n *Node) applyDecoded(e raftpb.Entry, req *api.InternalRaftRequest) error {
	switch e.Type {
	case raftpb.EntryNormal:
		if len(e.Data) > 0 {
			if req == nil {
				var ok bool
				if req, ok = n.proposed.take(requestID(e.Data)); !ok {
					var err error
					if req, err = n.specs.decodeRequest(e); err != nil {
						return err
					}
				}
			}
			n.held = append(n.held, heldOutcome{req.Id, n.cfg.Applier.ApplyHeld(e.Index, req)})
		}
	case raftpb.EntryConfChange, raftpb.EntryConfChangeV2:
		cc, err := decodeConfChange(e)
		if err != nil {
			return err
		}
		if err := n.applyConfChange(cc); err != nil {
			return fmt.Errorf("conf change %d: %w", e.Index, err)
		}
		if v1, ok := cc.(raftpb.ConfChange); ok {
			// Woken after Advance, not now: raft drops a conf change
			// proposed while it still counts the previous one as unapplied.
			n.appliedConfChanges = append(n.appliedConfChanges, v1.ID)
		}
	}
	n.heldIndex = e.Index
	n.logBytes += len(e.Data)
	return nil
}

// publishApplied ends a Ready's entries: the applier publishes them, the
// applied index moves to the last one, and their proposers hear the
// outcome. In that order: a proposer told its write committed, or a read
// that waited for the applied index, must find the write in the store.
func (n *Node) publishApplied() {
	if n.heldIndex <= n.applied.Load() {
		return
	}
	n.cfg.Applier.Publish()
	n.applied.Store(n.heldIndex)
	for _, o := range n.held {
		n.wait.trigger(o.id, o.err)
	}
	clear(n.held)
	n.held = n.held[:0]
}

// Replayed reports whether the applier holds everything the log held as
// committed when this member opened, with the applied index and that
// commit index. Until then the store is behind what this member may have
// answered before it stopped: reads would go backwards.
func (n *Node) Replayed() (applied, openCommit uint64, ok bool) {
	applied = n.applied.Load()
	return applied, n.openCommit, applied >= n.openCommit
}

// applyConfChange hands cc to raft and mirrors it in the member list. The
// context of an add is the new member's api.RaftMember.
func (n *Node) applyConfChange(cc raftpb.ConfChangeI) error {
	added, removed, err := memberChanges(cc)
	if err != nil {
		return err
	}
	n.confState = *n.rn.ApplyConfChange(cc)
	for _, m := range added {
		n.members.add(m)
		n.addPeer(m)
		// A newcomer with an empty log catches up from a snapshot once
		// the log it needs is compacted; raft ignores a snapshot whose
		// configuration lacks the receiver, so take one that has it.
		if n.snapshotIndex > 0 {
			n.snapshotNow = true
		}
	}
	for _, id := range removed {
		n.members.remove(id)
		if n.cfg.Transport != nil && id != n.raftID {
			n.cfg.Transport.RemovePeer(id)
		}
		if id == n.raftID {
			n.removedSelf = true
		}
	}
	return nil
}

// decodeConfChange reads a conf change entry of either version.
func decodeConfChange(e raftpb.Entry) (raftpb.ConfChangeI, error) {
	if e.Type == raftpb.EntryConfChange {
		var cc raftpb.ConfChange
		if err := cc.Unmarshal(e.Data); err != nil {
			return nil, fmt.Errorf("decode conf change %d: %w", e.Index, err)
		}
		return cc, nil
	}
	var cc raftpb.ConfChangeV2
	if err := cc.Unmarshal(e.Data); err != nil {
		return nil, fmt.Errorf("decode conf change %d: %w", e.Index, err)
	}
	return cc, nil
}

// memberChanges is what cc does to the member list: the members it adds
// or updates (its context is the api.RaftMember; an update carries a new
// address, as a formation rejoin after an address change does) and the
// raft ids it removes.
func memberChanges(cc raftpb.ConfChangeI) (added []*api.RaftMember, removed []uint64, err error) {
	v2 := cc.AsV2()
	for _, ch := range v2.Changes {
		switch ch.Type {
		case raftpb.ConfChangeAddNode, raftpb.ConfChangeAddLearnerNode, raftpb.ConfChangeUpdateNode:
			m := &api.RaftMember{}
			if err := proto.Unmarshal(v2.Context, m); err != nil {
				return nil, nil, fmt.Errorf("decode member context: %w", err)
			}
			m.RaftId = ch.NodeID
			added = append(added, m)
		case raftpb.ConfChangeRemoveNode:
			removed = append(removed, ch.NodeID)
		}
	}
	return added, removed, nil
}

// addPeer tells the transport where another member is.
func (n *Node) addPeer(m *api.RaftMember) {
	if n.cfg.Transport == nil || m.RaftId == n.raftID {
		return
	}
	if err := n.cfg.Transport.AddPeer(m.RaftId, m.Address); err != nil {
		n.cfg.Logger.Warn("add raft peer", "raft_id", fmt.Sprintf("%x", m.RaftId), "address", m.Address, "err", err)
	}
}
