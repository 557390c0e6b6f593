// Package orchestrator keeps the cluster's tasks in line with its services.
// It runs on the leader only and meets the other subsystems in the store:
// it writes tasks, the scheduler gives them a node, the dispatcher carries
// desired states to the agents and writes back what they report.
//
// The contract, per service:
//
//   - Replicated services keep exactly spec.replicas occupied slots,
//     numbered from 1. A slot is occupied while it holds a live task
//     (desired RUNNING, status not terminal) or a finished one (desired
//     COMPLETE: it ended and the restart policy forbids another attempt).
//     Scaling up fills the lowest free slot numbers; scaling down empties
//     slots, tasks not yet running first, then those on the most loaded
//     nodes, then the highest slot numbers.
//   - Global services keep one task (slot 0, node_id set) on every node
//     that is READY, ACTIVE and matches the placement. A task is stopped
//     when its node is drained, stops matching, is DOWN or is removed; a
//     paused node keeps its task but gets no new one.
//   - Jobs (jobs.go, docs/adr/0060-jobs.md) run to completion. A
//     replicated job fills its empty slots 1..spec.replicas, lowest
//     first, while fewer than max_concurrent (0: replicas) of its tasks
//     are busy (live, or stopping and not yet terminal); a slot is done
//     once finished. A global job runs one task on every node a global
//     service would, nodes that become eligible later included; a
//     completion stays on a node that is drained, down or no longer
//     matches. Every task of a job carries the service's
//     job_status.iteration as its job_iteration; a task of an older
//     iteration leaves its slot (stopped when live, else desired
//     SHUTDOWN), so a new iteration runs every slot once more. A job's
//     live replica on a draining node is stopped, not handed over, and
//     its slot refilled once it has stopped. Jobs are neither rolled by
//     the update machine nor rebalanced.
//   - Every new task carries a copy of the service spec, its spec_version,
//     desired RUNNING and status PENDING. Restarts also carry not_before
//     (now + restart delay), which marks them as restart attempts.
//   - Restart supervisor: a task that ends (COMPLETE, FAILED, REJECTED,
//     SHUTDOWN) while desired RUNNING is replaced in its slot (or on its
//     node) when spec.restart allows it (condition any | on-failure | none;
//     max_attempts counts earlier restarts of the slot with the same
//     spec_version and job iteration whose not_before falls within window;
//     for a job, condition any is on-failure, as Swarm's). The old task
//     gets desired SHUTDOWN. When the policy says no, the task gets desired
//     COMPLETE: the slot is finished and is not refilled until the spec
//     changes.
//   - Node DOWN or removed (never UNKNOWN): tasks on it that have not
//     ended get status ORPHANED ("node down") and desired SHUTDOWN; a
//     replicated slot whose task was live gets a replacement at once,
//     which is not a restart attempt. When the node comes back its agent is
//     told to stop them; nothing here makes them live again.
//   - Drain (node availability DRAIN, drain state DRAINING): every live
//     replicated task on the node gets a replacement in its slot
//     (replaces = its id, placed elsewhere by the scheduler); the old task
//     keeps running until the replacement is RUNNING, then gets desired
//     SHUTDOWN (start-first). While the node stays DRAIN the two share the
//     slot without counting twice. A pinned replica of a forced drain is
//     stopped without replacement. Global tasks are dropped (above). The
//     drainer (drain.go), run by Run, writes progress to Node.drain:
//     moved/total, TIMED_OUT after replacement_timeout, DRAINED, and
//     removes the node when the drain says remove. A cancelled drain
//     (availability back) keeps the running old task over a replacement
//     that has not run.
//   - Spec updates roll (a task is outdated when its spec_version is older
//     and its spec differs from the service's in more than replicas and
//     the update policies) under the service's update policy, or its
//     rollback policy while rolling back, and only while the update is
//     not paused: tasks not yet running are replaced at once; running ones
//     go parallelism slots at a time, stop-first or start-first, a slot in
//     flight until its new replica has run for the monitor period, the next
//     delay after that. The update machine (update.go) counts replicas that
//     end within their monitor period as failures, takes the failure
//     action beyond max_failure_ratio, and records the outcome on the
//     service's update_status.
//   - A removed service's tasks get desired SHUTDOWN and are deleted once
//     terminal, or at once if they never left PENDING. No task of it is
//     proposed once the removal has committed; a batch proposed before
//     may still land after it, and its tasks go the same way. Terminal
//     history is kept per slot (at least five tasks, more when max_attempts needs
//     them); older history and the history of emptied slots are deleted.
//
// Every decision is a function of the store's content and the clock, so a
// new leader's orchestrator picks up where the last one stopped. A pass
// plans from one read and proposes its writes in batches (WithBatchSize);
// a version conflict with another writer makes it read and plan again. A
// pass creates at most as many of a service's missing tasks as the service
// holds already, and at least one batch's worth (it stops one batch of a
// removed service's): the rest come in the next passes, each from a fresh
// read. So a pass holds at most about as much again as the store holds of
// the service, creating N replicas takes about log2(N/batch) passes, each
// reading the service's tasks once, a removal or a change is seen within
// a pass, and a cancelled Run returns after the batch under way.
//
// The store's events reach Run through a watch filter that only notes the
// services they concern (intake.go), so a burst of writes of any size
// becomes one pass; task updates that change only a task's meta or status
// details are not noted at all.
package orchestrator
