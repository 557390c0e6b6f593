package rolemanager

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jaco-project/jaco/manager/voterset"
)

// Member is one raft member as the policy sees it.
//
// NodeID is empty for a member that raft's configuration holds but the
// member list does not name (a transient state around a conf change, or a
// bug). Such a member is never chosen, since the order is by node id; as a
// voter it still counts, because it votes, while as a nonvoter it is left
// out of the manager count, because it could not be promoted to meet a
// target that counted it.
type Member struct {
	RaftID uint64
	NodeID string
	Voter  bool
	// CaughtUp: the leader's progress for the member matches its commit
	// index and the member was recently active. Meaningful for nonvoters.
	CaughtUp bool
	// InConfigSince is when the leader first saw the member in the
	// configuration.
	InConfigSince time.Time
}

// Action is one suffrage change, or none.
type Action int

// The actions Decide can take.
const (
	NoAction Action = iota
	Promote         // nonvoter -> voter
	Demote          // voter -> nonvoter
)

func (a Action) String() string {
	switch a {
	case NoAction:
		return "none"
	case Promote:
		return "promote"
	case Demote:
		return "demote"
	default:
		return fmt.Sprintf("Action(%d)", int(a))
	}
}

// Decision is what Decide chose, with a reason for logs. RaftID and NodeID
// are zero for NoAction.
type Decision struct {
	Action Action
	RaftID uint64
	NodeID string
	Reason string
}

// Decide returns the one suffrage change that moves members toward
// voterset.TargetVoters, or NoAction. leader is the leader's raft id; it
// is never demoted. now and promoteAfter decide which nonvoters have been
// in the configuration long enough.
//
// When there are too few voters it promotes the first nonvoter in node id
// order that is eligible (caught up and in the configuration for at least
// promoteAfter), skipping those that are not: a lagging joiner does not
// hold up a ready one. When there are too many it demotes the last voter in
// node id order that is not the leader. Ties in node id (which should not
// happen) are broken by raft id. The result does not depend on the order
// of members.
func Decide(members []Member, leader uint64, now time.Time, promoteAfter time.Duration) Decision {
	var voters, learners []Member
	for _, m := range members {
		switch {
		case m.Voter:
			voters = append(voters, m)
		case m.NodeID != "":
			learners = append(learners, m)
		}
	}
	managers := len(voters) + len(learners)
	target := voterset.TargetVoters(managers)
	counts := fmt.Sprintf("voters %d, target %d for %d managers", len(voters), target, managers)

	switch {
	case len(voters) < target:
		slices.SortFunc(learners, byNodeID)
		var skipped []string
		for _, m := range learners {
			if why := ineligible(m, now, promoteAfter); why != "" {
				skipped = append(skipped, m.NodeID+" "+why)
				continue
			}
			reason := fmt.Sprintf("%s; %s is the first eligible nonvoter", counts, m.NodeID)
			if len(skipped) > 0 {
				reason += " (skipped " + strings.Join(skipped, ", ") + ")"
			}
			return Decision{Action: Promote, RaftID: m.RaftID, NodeID: m.NodeID, Reason: reason}
		}
		return Decision{Reason: fmt.Sprintf("%s; no eligible nonvoter (%s)", counts, strings.Join(skipped, ", "))}
	case len(voters) > target:
		slices.SortFunc(voters, byNodeID)
		for _, m := range slices.Backward(voters) {
			if m.RaftID == leader || m.NodeID == "" {
				continue
			}
			return Decision{Action: Demote, RaftID: m.RaftID, NodeID: m.NodeID,
				Reason: fmt.Sprintf("%s; %s is the last voter that is not the leader", counts, m.NodeID)}
		}
		return Decision{Reason: counts + "; no voter but the leader to demote"}
	default:
		return Decision{Reason: counts}
	}
}

// ineligible says why the nonvoter m may not be promoted yet, or "".
func ineligible(m Member, now time.Time, promoteAfter time.Duration) string {
	if !m.CaughtUp {
		return "not caught up"
	}
	if age := now.Sub(m.InConfigSince); age < promoteAfter {
		return fmt.Sprintf("in the configuration for %v of %v", age, promoteAfter)
	}
	return ""
}

func byNodeID(a, b Member) int {
	return cmp.Or(strings.Compare(a.NodeID, b.NodeID), cmp.Compare(a.RaftID, b.RaftID))
}
