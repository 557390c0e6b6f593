package node

import (
	"context"
	"fmt"

	"google.golang.org/grpc/codes"
	grpcstatus "google.golang.org/grpc/status"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/node/keyring"
)

// Autolock is the keyring's (node/keyring, docs/adr/0012): it holds the
// unlock key, seals this node's files and runs the autolock loop. The
// node serves Unlock on the local socket, starts what a locked manager
// could not, and answers the keyring's questions (keyringDaemon).

// nodeService serves NodeService on the local socket.
type nodeService struct {
	api.UnimplementedNodeServiceServer
	n *Node
}

// Unlock opens a locked manager with the unlock key (the keyring checks
// it and slows down wrong ones) and starts it; an unlocked node answers
// its state.
func (s nodeService) Unlock(_ context.Context, req *api.UnlockNodeRequest) (*api.UnlockNodeResponse, error) {
	n := s.n
	unlock, err := n.lockInit()
	if err != nil {
		return nil, err
	}
	defer unlock()
	if n.State() != api.NodeState_NODE_STATE_LOCKED {
		return &api.UnlockNodeResponse{State: n.State()}, nil
	}
	if err := n.keys.Unlock(req.UnlockKey); err != nil {
		return nil, err
	}
	if err := n.startUnlocked(); err != nil {
		if n.Manager() == nil { // nothing started: still locked
			n.keys.ForgetUnlockKey()
		}
		// A failure of this daemon, not of the request.
		return nil, grpcstatus.Error(codes.Internal, fmt.Sprintf("unlocked, but could not start: %v", err))
	}
	n.log.Info("unlocked: manager started")
	return &api.UnlockNodeResponse{State: n.State()}, nil
}

// startUnlocked does for an unlocked manager what New does for one whose
// keys are in clear. Until the manager starts, the node stays locked.
func (n *Node) startUnlocked() error {
	if _, _, _, err := n.keys.LoadNodeFiles(); err != nil {
		return err
	}
	if n.cfg.ForceNewCluster {
		if err := n.formation.ForceNewCluster(); err != nil {
			return err
		}
	}
	if err := n.startManager(); err != nil {
		return err
	}
	if err := n.reloadTLS(); err != nil {
		return err
	}
	return n.startAgent()
}

// keyringDaemon is what the keyring's autolock loop asks of the node.
type keyringDaemon struct{ n *Node }

func (d keyringDaemon) LockChanges() (func(), error) { return d.n.lockInit() }

func (d keyringDaemon) Manager() keyring.Manager {
	// A locked node runs no manager; the state is checked all the same,
	// so that no pass rewrites the files of a node being unlocked.
	if m := d.n.Manager(); m != nil && d.n.State() != api.NodeState_NODE_STATE_LOCKED {
		return m
	}
	return nil
}
