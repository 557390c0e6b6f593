package voterset

import "errors"

// Why a voter-safe removal (RemoveMember) or a leadership handover
// (HandOver) of the role manager's VoterReconciler was refused.
var (
	// ErrRemoveLeader: leadership must move before the leader can go.
	ErrRemoveLeader = errors.New("the leader cannot remove itself; leadership must move first")
	// ErrNotLeading: only the leader changes the membership.
	ErrNotLeading = errors.New("this manager is not the leader")
	// ErrNoSuchMember: the raft id is not in the group.
	ErrNoSuchMember = errors.New("no such raft member")
	// ErrLastManager: there is no other member to lead.
	ErrLastManager = errors.New("no other manager could take over as leader")
)
