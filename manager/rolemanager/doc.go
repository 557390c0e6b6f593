// Package rolemanager runs on the leader and shapes the raft voter set
// (docs/design.md §4, "Voter-set policy"). Managers join as nonvoters; the
// VoterReconciler promotes and demotes them so that the number of voters
// follows the number of managers:
//
//	managers  1  2  3  4  5  6  7+
//	voters    1  1  3  3  5  5  7
//
// Why this shape:
//
//   - Odd voter counts. A quorum of 2 of 2 tolerates no more failures than
//     1 of 1, and 3 of 4 no more than 2 of 3; the even rung only adds an ack
//     to every commit and one more machine that can stall it. So an even
//     manager count never yields an even target.
//   - A cap of 7. Seven voters already survive three simultaneous failures;
//     more voters add commit latency, not useful resilience. Managers past
//     the seventh stay nonvoters: they replicate the log and are ready to
//     be promoted when a voter leaves.
//   - One suffrage change per tick. Each change is a single-member
//     configuration change, whose old and new quorums always intersect, and
//     the reconciler waits until it is applied before it looks again. A
//     wrong decision therefore costs at most one member's vote, and every
//     decision is taken against the configuration the previous one produced.
//     Going from 1 to 3 voters passes through 2 for a tick or more; that is
//     the price of never changing two votes at once.
//   - Determinism across leaders. Decide depends only on the configuration,
//     the node ids and each nonvoter's own readiness: it promotes the
//     lexicographically-first eligible nonvoter and demotes the
//     lexicographically-last voter that is not the leader. A new leader
//     computes the same target and the same next member, so a failover
//     never swaps a voter out and back in. The leader never demotes itself
//     (that would hand leadership away in the middle of a reconciliation).
//   - The catch-up gate. The most dangerous single change is the one from 1
//     voter to 2 (on the way to 3): the quorum becomes 2 of 2, so if the
//     promoted member cannot actually receive and acknowledge the log,
//     nothing commits any more, not even the demotion that would undo it.
//     Adding a nonvoter commits as soon as the leader has the entry, while
//     the joiner's transport may still be racing to catch up (the 1 → 2
//     race, bug-003). A nonvoter is therefore eligible only once it has
//     been in the configuration for PromoteAfter (3 s by default) and its
//     raft progress shows it caught up: Match at or past the leader's
//     commit index, and recently active. The first-seen clocks live in the
//     leader's memory and restart with each term; a new leader only waits a
//     little longer before promoting, which is the safe direction.
//
// Decide is the whole policy as a pure function; VoterReconciler feeds it
// from raft's status and member list and carries out its decision. The
// table above (voterset.TargetVoters), the demotion check and the errors
// of a removal live in manager/voterset, because the Control API and
// membership apply them too and must not import this package. The
// policy scenarios are written as data in testdata/*.txt (see
// scenario_test.go for the script language).
package rolemanager
