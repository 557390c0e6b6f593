// Package voterset states the rules of the raft voter set that more than
// one leader subsystem needs: how many voters a number of managers want
// (TargetVoters); whether a manager may be demoted without costing the
// quorum (CheckDemotion: the Control API refuses the operator's request
// with it, the role manager re-checks before it acts); and why a
// voter-safe removal or a leadership handover was refused (the errors the
// role manager's VoterReconciler returns and membership branches on).
//
// The role manager enforces these rules and its package comment says why
// the voter counts are what they are. This package only states them and
// imports no leader subsystem, so that none of them has to import another
// (internal/importrules checks it).
package voterset

// MaxVoters caps the voter set: seven voters survive three failures.
const MaxVoters = 7

// TargetVoters is the number of voters wanted among managers raft members
// (voters and nonvoters): the largest odd number not above managers, capped
// at MaxVoters. It is 0 when there are no managers.
func TargetVoters(managers int) int {
	switch {
	case managers <= 0:
		return 0
	case managers >= MaxVoters:
		return MaxVoters
	case managers%2 == 0:
		return managers - 1
	default:
		return managers
	}
}
