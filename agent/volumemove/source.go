// Package volumemove is a node's part in moving volumes between nodes
// (docs/adr/0064-volume-move.md): as the source it serves a volume's
// files to the one node the leader told it to (Source), as the
// destination it pulls them, verified and resumable, and reports to the
// dispatcher (Mover). Both follow the orders in the node's own Node
// object (volume_moves), which every session message brings when it
// changes.
package volumemove

import (
	"slices"
	"sync"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"

	"github.com/jaco-project/jaco/agent/volumecopy"
	"github.com/jaco-project/jaco/agent/volumes"
	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/api/identity"
	"github.com/jaco-project/jaco/api/reason"
)

// Orders is the latest volume_moves of this node.
type Orders struct {
	mu     sync.Mutex
	orders []*api.VolumeMoveOrder
}

// Set replaces the orders.
func (o *Orders) Set(orders []*api.VolumeMoveOrder) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.orders = slices.Clone(orders)
}

// find is the order to send volumeID's generation gen from node from to
// node to, or nil.
func (o *Orders) find(volumeID string, gen uint64, from, to string) *api.VolumeMoveOrder {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, x := range o.orders {
		if x.GetVolumeId() == volumeID && x.GetGeneration() == gen && x.GetFromNode() == from && x.GetToNode() == to {
			return x
		}
	}
	return nil
}

// Source serves this node's volumes to the nodes they move to.
type Source struct {
	NodeID string
	Dir    volumes.Dir
	Orders *Orders
}

// ReadVolume streams the volume req names to the caller, which must be
// the node an order of this node sends it to: the rpc's policy admits
// every node of the cluster (by its certificate), the order narrows it to
// the one the leader chose, for that volume's generation only.
func (s *Source) ReadVolume(req *api.ReadVolumeRequest, stream grpc.ServerStreamingServer[api.VolumeChunk]) error {
	id, ok := identity.FromContext(stream.Context())
	if !ok || id.Kind != identity.Node || id.NodeID == "" {
		return reason.Error(codes.PermissionDenied, reason.PermissionDenied, "a volume is read only by the node it moves to (caller: %v)", id)
	}
	o := s.Orders.find(req.GetVolumeId(), req.GetGeneration(), s.NodeID, id.NodeID)
	if o == nil || o.GetGeneration() == 0 {
		return reason.Error(codes.PermissionDenied, reason.PermissionDenied,
			"node %s was not told to receive generation %d of volume %s from this node", id.NodeID, req.GetGeneration(), req.GetVolumeId())
	}
	path, err := s.Dir.SendPath(o.GetName(), o.GetVolumeId(), o.GetGeneration()-1)
	if err != nil {
		return reason.Error(codes.Aborted, reason.VolumeUnavailable, "%v", err)
	}
	return volumecopy.Send(stream.Context(), path, req, stream.Send)
}
