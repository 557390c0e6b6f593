// Package transport carries raft messages from this manager to the other
// members of the raft group over gRPC (the RaftService of api/raft.proto).
//
// go.etcd.io/raft only says which member a message is for; this package
// knows where each member is and gets the message there. Its shape follows
// from what raft and the Ready loop need:
//
//   - Send never blocks. The Ready loop calls it after persisting, and a
//     slow or dead peer must not stall the whole group. Send only puts each
//     message on its peer's bounded queue; when the queue is full (or the
//     peer is unknown) the message is dropped and the peer reported
//     unreachable, which raft handles like any lost message: it probes the
//     follower and resends what is missing.
//   - Per-peer FIFO. Each peer has one queue drained by one goroutine, so
//     messages to a peer arrive in the order raft produced them (raft
//     tolerates loss, but reordering appends wastes round trips). Peers do
//     not wait for one another.
//   - One stream per peer. What is queued goes out as one batch after
//     another on a long-lived RaftMessages stream, without waiting for an
//     answer each (docs/adr/0048); the receiver steps each batch in order
//     and ends the stream with its first refusal. A peer that does not
//     serve the stream (an earlier version) gets one ProcessRaftMessage
//     call a batch.
//   - Every send is bounded by SendTimeout. A failed send, or the end of
//     the stream, is reported with ReportUnreachable, and the messages queued behind it are dropped
//     rather than each waiting out its own timeout against a peer just
//     found unreachable (raft resends what matters). A snapshot (MsgSnap)
//     is also reported with ReportSnapshot, SnapshotFinish or
//     SnapshotFailure, because raft keeps that follower paused until it
//     hears the outcome.
//   - Large messages are streamed. A message whose encoding exceeds
//     MaxUnarySize (in practice a snapshot) goes over StreamRaftMessage in
//     ChunkSize pieces instead of in a batch, staying under gRPC's
//     4 MiB per-message limit without raising it for every call. For a
//     stream, SendTimeout bounds each chunk rather than the whole transfer,
//     so a big snapshot on a slow link finishes while a stalled one fails.
//   - Unknown destinations are resolved. A member that missed the conf
//     change adding the current leader receives the leader's messages but
//     cannot answer them (docker/swarmkit#436). When Send meets an unknown
//     raft id it asks the known peers' ResolveAddress, in the background
//     and at most once per ResolveInterval for that id, and adds the peer
//     when one of them knows it.
//   - Removal is recognised by its reason word. A peer refusing a message
//     with reason node_removed means this member was removed from the
//     cluster (ids are never reused, so that is final): the transport calls
//     OnRemoved once and sends nothing more, queued or new.
//
// Connections come from the Dialer the node supplies (mTLS is its job) and
// are made with grpc.NewClient, so adding a peer does not block. Every
// goroutine the transport starts is stopped and waited for by RemovePeer
// (that peer's) or Stop (all).
package transport
