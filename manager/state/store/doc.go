// Package store keeps a manager's copy of the cluster state: clusters,
// nodes, services, tasks, join tokens, networks, secrets and configs in an
// in-memory copy-on-write database (manager/state/cowdb), with indexed
// reads, watches and snapshots.
// Secrets are held whole, data included, like everything else here; what
// leaves the process is decided at the API edge (controlapi strips the
// data, the dispatcher sends it only to nodes whose tasks reference it).
//
// The contract:
//
//   - ApplyHeld is the single writer. The raft node calls it for every
//     committed normal entry, in log order, on every manager. It applies
//     the entry's batch of actions all or nothing, deterministically (the
//     same log gives the same content on every replica), and stamps every
//     written object with meta.version = the entry's index. The entry's
//     objects become the stored ones: the caller hands the request over.
//     Readers and watchers see held batches at Publish, which the raft
//     node calls once per Ready, before it answers their proposers; Apply
//     is the two in one.
//   - Update proposes and waits. Its fn reads through a Tx and records
//     creates, updates and deletes; Update hands them to the Proposer as one
//     batch and returns once that entry is applied, with Apply's verdict.
//     Updates and deletes carry the version their caller read; a batch
//     whose version no longer matches is refused with ErrVersionConflict.
//   - Readers never see a half-applied batch. View, ViewAndWatch, Save and
//     Freeze read an immutable snapshot of the latest committed state, and
//     the events of a batch are published after it commits, in apply order.
//   - Stored objects are never modified. Reads and events hand out copies;
//     Freeze shares them, to be encoded, not changed, and so do EachTask
//     and ListTasksByServiceShallow, for readers that change none (ADR
//     0031). Tasks share one copy of each spec version (api.Specs).
//   - Restore (from a raft snapshot) replaces everything and publishes one
//     EventReset.
package store
