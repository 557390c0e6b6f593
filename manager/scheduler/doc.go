// Package scheduler is the leader's placement loop: it gives PENDING
// replicas (tasks) a node.
//
// The contract, as the other subsystems see it in the store:
//
//   - It acts on tasks with status.state PENDING and desired_state RUNNING
//     or lower. A task with node_id "" gets the best eligible node; a task
//     that already names a node (global services, pinned replicas) gets
//     that node if it is eligible. Either way the scheduler writes node_id
//     and status.state ASSIGNED (with timestamp and message) and nothing
//     else; the dispatcher takes it from there.
//   - A task that cannot be placed stays PENDING with status.reason
//     no_suitable_node (status.message says which filter excluded how many
//     nodes) or waiting_on_dependency (the message names the dependency).
//     The reason is written when it changes; a message alone changes the
//     stored task at most once a minute, so a cluster that churns does not
//     turn into a stream of writes.
//   - A node is eligible when every filter passes (filters.go): ready and
//     active, has network isolation, is the pinned node if there is one,
//     runs the replica's runtime, meets the constraints, has the
//     reservations free, has a container address left (containerd
//     replicas), and has the published host ports free. Among eligible nodes, replicas spread over the
//     groups of each placement preference in turn (fewest replicas of the
//     service first), then go to the least-loaded node.
//   - Decisions come in batches: events are coalesced for a short delay,
//     replicas of one service share one pass over the nodes, and the
//     assignments are committed in few proposals. A proposal refused with
//     a version conflict makes the scheduler read those tasks again and
//     decide them anew in the next batch.
//
// The node index (per-node reservations, ports and task counts) is kept
// from store events; it is never rebuilt for a decision.
package scheduler
