// Package raft runs a manager's member of the cluster's raft group.
//
// go.etcd.io/raft/v3 is a pure state machine; this package gives it a
// clock, a disk and a network, and applies what it commits to the store.
// One goroutine, the Ready loop, owns all of that. For every Ready it:
//
//  1. records a new leader or term; when this member stops being leader,
//     or the term moves on, every proposal still waiting is failed with
//     ErrLostLeadership (its entry may yet commit: the outcome is unknown);
//  2. persists the incoming snapshot, then the entries and hard state, to
//     the WAL and snap directory (storage package), sealed with the data
//     key and fsynced — only then
//  3. sends the messages to peers (Transport);
//  4. applies committed entries in log order: conf changes to raft and the
//     member list, store batches to the store (Applier.ApplyHeld); then
//     has the store publish them (Applier.Publish, one commit for the
//     Ready), moves the applied index, and wakes the proposer of each
//     entry with the result ApplyHeld returned. Plain writes already
//     committed are applied on a goroutine during steps 2 and 3 instead,
//     the loop waiting for it before step 5 (overlapApply);
//  5. starts a snapshot when one is due, written off the loop
//     (snapshot.go), and compacts the in-memory log behind the last one,
//     keeping LogEntriesForSlowFollowers, at most keptLogBytes of them;
//  6. calls Advance.
//
// A write (Propose) registers a wait, proposes, and returns when its entry
// has been applied locally, with the store's verdict. It fails fast with
// ErrNotLeader when this member is not the leader (nothing was proposed,
// a retry is safe). Once raft may have taken the entry, every failure
// wraps ErrOutcomeUnknown: leadership changing first (ErrLostLeadership),
// the member stopping, or the caller's context ending. No timeout
// retracts an entry, and a later leader may commit it.
//
// On restart the store is rebuilt from the newest snapshot plus the
// committed entries after it, replayed through the same apply path: while
// the member opens (New), before it serves, up to the first conf change
// after the snapshot; from there on through the Ready loop.
package raft
