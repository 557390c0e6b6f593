// Package dispatcher is the leader's side of every agent's session: it
// keeps each node's liveness (sessions, heartbeats, READY / DOWN), streams
// each node the replicas it must run, and writes the replica statuses the
// agents report.
//
// One Server is registered with the gRPC server for the daemon's life (behind
// the raftproxy wrapper, which forwards calls from any manager to the
// leader), but it serves only while Run runs, that is while this manager
// leads. Outside Run every call fails with codes.Unavailable and reason
// no_leader; when Run ends every open stream ends with that error. Sessions
// live in the leader's memory only: a new leader knows none of them.
//
// The caller is the node named by its certificate (identity kind node);
// any other caller is refused with permission_denied.
//
// The protocol an agent follows:
//
//  1. Session(description). The node must exist in the store, otherwise
//     codes.PermissionDenied with reason node_removed (stop: the node is no
//     longer part of the cluster). The dispatcher records the description
//     and status READY ("session open") on the Node, then sends a
//     SessionMessage {session_id, managers, heartbeat_period, node}, and
//     sends it again whenever the node object or the managers change, or
//     the overlay as the node sees it: every message carries the whole set of
//     overlay peers, the networks the node holds a block of and their
//     services' endpoints (VIP, and the replicas desired and reported
//     RUNNING with an address there, on nodes not DOWN), sent at once on a
//     change, without batching (docs/adr/0026). A new
//     session of the same node replaces the old one: the old one's streams
//     end and its id stops working.
//     The session lives as long as this stream: when it ends, the other
//     calls with its id fail, and the node is marked DOWN unless a new
//     session opens within the grace period.
//  2. Heartbeat(session_id) at least every heartbeat_period (the response
//     says when the next is due). A node not heard from for grace =
//     3 × period (default 5 s) is marked DOWN ("heartbeat missed for
//     15s") and its session ends.
//  3. Assignments(session_id): first a COMPLETE set (everything the
//     agent runs that is not in it must go), then INCREMENTAL messages,
//     changes gathered over ~50 ms. No message holds more than 1 MiB of
//     replicas (one at least): a larger set comes in several COMPLETE
//     messages, all but the last marked more, a larger batch in several
//     INCREMENTAL ones (docs/adr/0019-list-paging.md). A replica is in the set when it is on
//     the node, ASSIGNED or later, and desired RUNNING or not yet in a
//     terminal state. An update is sent only when desired_state,
//     spec_version or not_before changed (or the replica is new to the
//     set), never for the status the agent itself reported; a replica
//     leaving the set (deleted, moved, stopped and desired SHUTDOWN) is
//     sent in removed. The stream ends when the session does.
//  4. UpdateTaskStatus(session_id, updates): returns once the updates are
//     committed. Updates for replicas of other nodes, unknown replicas and
//     backward moves (by TaskState order) are dropped without error. A
//     status whose addresses are not all in the node's own blocks of their
//     networks is recorded without them (the replica stays out of service
//     discovery).
//
// Errors and what the agent does about them:
//
//   - codes.NotFound, reason not_found: the session id is not the node's
//     current session here (expired, replaced, or opened under an earlier
//     leader). Open a new session at once and restart the streams.
//   - codes.Unavailable, reason no_leader (retryable): this manager does not
//     lead, or stopped leading. Reconnect through any manager after a short
//     back-off and open a new session.
//   - codes.PermissionDenied, reason node_removed: the node was removed.
//   - codes.PermissionDenied, reason permission_denied: not a node caller.
//
// At the start of Run every known node that is not DOWN gets a full grace
// period to open a session here, so nodes that were READY under the
// previous leader are not marked DOWN merely because leadership moved;
// and 10 ms more for each such node (two minutes at most), the time a new
// leader takes to open thousands of sessions at once (docs/adr/0047).
//
// Writes are batched: node status changes and replica status reports from
// all nodes are coalesced over a short window and committed in few
// proposals (chunked by size), re-reading and retrying on version
// conflicts.
package dispatcher
