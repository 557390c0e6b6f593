package node

import (
	"google.golang.org/grpc/codes"

	"github.com/jaco-project/jaco/api/reason"
)

// errStopping refuses a change of what the node runs once it stops.
var errStopping = reason.Error(codes.Unavailable, reason.Unavailable, "this node is stopping")

// lockInit takes initMu for a change of what the node runs, or refuses
// with errStopping once Stop has begun. Stop holds initMu only to set
// stopping, not while its servers wait for their calls to end: a call
// waiting here (an init, a join, an unlock) would otherwise wait for the
// stop that waits for it.
func (n *Node) lockInit() (unlock func(), err error) {
	n.initMu.Lock()
	if n.stopping {
		n.initMu.Unlock()
		return nil, errStopping
	}
	return n.initMu.Unlock, nil
}
