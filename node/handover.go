package node

import (
	"context"
	"time"
)

// handOverTimeout bounds a stopping leader's hand-over: a transfer takes
// a round trip or two, and one that has not taken within an election
// timeout (raft then abandons it) is not worth waiting for.
const handOverTimeout = time.Second

// handOver makes a stopping manager that leads give leadership away
// first: writes move to the new leader at once, and the other agents'
// dispatcher sessions end here instead of holding the graceful stop.
// Then it ends the other managers' raft message streams into this one,
// which would hold it too.
func (n *Node) handOver() {
	if m := n.mgr.Load(); m != nil {
		ctx, cancel := context.WithTimeout(context.Background(), handOverTimeout)
		defer cancel()
		m.HandOver(ctx)
		m.EndRaftStreams()
	}
}
