package raft

import (
	"context"
	"fmt"
	"slices"
	"time"

	"go.etcd.io/raft/v3"
)

// A leader whose process ends (killed, crashed, OOM) closes its sockets,
// and every follower's connection to it breaks at once. Waiting out the
// election timeout after that (1-2 s) is time the cluster takes no write
// for nothing. So a follower told that the connection to its leader broke
// forgets that leader (etcd raft's ForgetLeader: a leaderless follower
// grants pre-votes at once, where one that heard from its leader within
// the election timeout refuses them), and the lowest-id voter among the
// others campaigns shortly after, the next one a little later should the
// first not win, and so on (docs/adr/0029).
//
// Safety is raft's, untouched: a vote still needs a quorum. A follower
// wrong about its leader (only its own connection broke) does not disrupt
// it: the other followers still hear from the leader and refuse the
// pre-vote, and the leader's next heartbeat makes it a follower again. A
// leader whose machine vanished without closing its sockets is found the
// usual way, by the election timeout.

const (
	// campaignSettle is how long the first campaigner waits after its own
	// connection broke, so that the other followers, whose connections
	// broke at the same moment, have forgotten the leader too.
	campaignSettle = 20 * time.Millisecond
	// campaignStagger separates the campaigns of the voters in id order:
	// a later one starts only if the earlier ones have not won by then.
	campaignStagger = 150 * time.Millisecond
)

// PeerLost tells the member that its connection to member id broke. It
// never blocks; the Ready loop acts on it.
func (n *Node) PeerLost(id uint64) {
	select {
	case n.lostC <- id:
	default: // one pending is enough: the loop reads the state anew
	}
}

// leaderLost forgets the leader when id is it and arms the campaign
// timer with this member's place among the remaining voters. It runs on
// the Ready loop.
func (n *Node) leaderLost(id uint64, campaign *time.Timer) {
	st := n.rn.Status()
	if st.RaftState != raft.StateFollower || st.Lead != id || id == raft.None {
		return
	}
	if err := n.rn.ForgetLeader(context.Background()); err != nil {
		n.cfg.Logger.Warn("forget the lost leader", "err", err)
		return
	}
	rank := n.campaignRank(id)
	if rank < 0 {
		return // not a voter: nothing to campaign for
	}
	n.cfg.Logger.Info("connection to the leader lost; it is forgotten, campaigning if no leader shows",
		"leader", fmt.Sprintf("%x", id), "campaign_in", campaignSettle+time.Duration(rank)*campaignStagger)
	campaign.Reset(campaignSettle + time.Duration(rank)*campaignStagger)
}

// campaignRank is this member's place, in raft id order, among the voters
// other than lost; -1 when it is not one of them.
func (n *Node) campaignRank(lost uint64) int {
	var others []uint64
	for _, v := range n.confState.Voters {
		if v != lost {
			others = append(others, v)
		}
	}
	slices.Sort(others)
	return slices.Index(others, n.raftID)
}

// campaignIfLeaderless starts an election when the member still has no
// leader: the lost leader has not come back and no one else won first.
func (n *Node) campaignIfLeaderless() {
	if st := n.rn.Status(); st.RaftState != raft.StateFollower || st.Lead != raft.None {
		return
	}
	if err := n.rn.Campaign(context.Background()); err != nil {
		n.cfg.Logger.Warn("start election", "err", err)
	}
}
