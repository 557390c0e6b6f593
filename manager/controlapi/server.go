// Package controlapi serves the Control service: what the CLI calls to read
// and change the cluster's declared state. Reads come from the local store;
// writes go through store.Update, which proposes them to raft. The
// raftproxy wrapper in front of it makes sure writes run on the leader.
package controlapi

import (
	"context"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/api/limits"
	"github.com/jaco-project/jaco/api/paging"
	"github.com/jaco-project/jaco/api/reason"
	"github.com/jaco-project/jaco/manager/apierror"
	"github.com/jaco-project/jaco/manager/events"
	"github.com/jaco-project/jaco/manager/state/store"
)

// NodeRemover takes a node out of the cluster (membership.Server).
type NodeRemover interface {
	RemoveNode(ctx context.Context, node *api.Node) error
}

// Server implements api.ControlServiceServer.
type Server struct {
	api.UnimplementedControlServiceServer
	store   *store.Store
	remover NodeRemover
	dial    NodeDialer
	// watchInterval paces WatchService streams (watchInterval; tests
	// lengthen it).
	watchInterval time.Duration
	// events is this manager's event log (WithEventLog).
	events *events.Log
	// minBackupInterval is the shortest backup interval accepted
	// (WithMinBackupInterval).
	minBackupInterval time.Duration
}

// Option configures a Server.
type Option func(*Server)

// WithNodeRemover lets the server remove nodes.
func WithNodeRemover(r NodeRemover) Option { return func(s *Server) { s.remover = r } }

// New returns a Control server over st.
func New(st *store.Store, opts ...Option) *Server {
	s := &Server{store: st, watchInterval: watchInterval, minBackupInterval: limits.MinBackupInterval}
	for _, o := range opts {
		o(s)
	}
	return s
}

// ListNodes lists one page of the nodes, in id order.
func (s *Server) ListNodes(_ context.Context, req *api.ListNodesRequest) (*api.ListNodesResponse, error) {
	after, err := paging.After(req.PageToken)
	if err != nil {
		return nil, err
	}
	page := paging.NewPage[*api.Node](req.PageSize)
	var counts []*api.ReplicaCount
	s.store.View(func(tx store.ReadTx) {
		tx.ScanNodes(after, func(n *api.Node) bool { return page.Add(n.Id, n) })
		for _, n := range page.Items {
			counts = append(counts, countReplicas(tx, "", n.Id))
		}
	})
	return &api.ListNodesResponse{Nodes: page.Items, NextPageToken: page.NextToken(), Counts: counts}, nil
}

// countReplicas counts the replicas of a service, or of a node, reading
// the stored tasks without copying them.
func countReplicas(tx store.ReadTx, serviceID, nodeID string) *api.ReplicaCount {
	c := &api.ReplicaCount{}
	tx.EachTask(serviceID, nodeID, func(t *api.Task) bool {
		if t.GetDesiredState() == api.TaskState_TASK_STATE_RUNNING {
			c.Live++
			if t.GetStatus().GetState() == api.TaskState_TASK_STATE_RUNNING {
				c.Running++
			}
		}
		if t.GetDesiredState() == api.TaskState_TASK_STATE_COMPLETE &&
			t.GetStatus().GetState() == api.TaskState_TASK_STATE_COMPLETE && t.GetStatus().GetExitCode() == 0 {
			c.Completed++
		}
		return true
	})
	return c
}

// GetNode finds a node by id or hostname.
func (s *Server) GetNode(_ context.Context, req *api.GetNodeRequest) (*api.GetNodeResponse, error) {
	var n *api.Node
	s.store.View(func(tx store.ReadTx) { n = FindNode(tx, req.Node) })
	if n == nil {
		return nil, notFound("node", req.Node)
	}
	return &api.GetNodeResponse{Node: n}, nil
}

// FindNode resolves what an operator typed for a node: an id, or else a
// hostname. Ids win, so a hostname that looks like another node's id
// cannot shadow it.
func FindNode(tx store.ReadTx, idOrName string) *api.Node {
	if n := tx.GetNode(idOrName); n != nil {
		return n
	}
	return tx.FindNodeByHostname(idOrName)
}

// RemoveNode takes a node, named by id or hostname, out of the cluster. A
// node that still hosts replicas is drained first (their replacements run
// elsewhere before they stop) and removed by the leader's drain machine
// once drained: the call returns when the drain has started, and the node
// shows its progress (Node.drain) until it is gone. A node with nothing
// on it goes at once, through the NodeRemover (a manager leaves raft with
// the voter rules).
func (s *Server) RemoveNode(ctx context.Context, req *api.RemoveNodeRequest) (*api.RemoveNodeResponse, error) {
	if s.remover == nil {
		return nil, reason.Error(codes.Unimplemented, reason.NotAManager, "this server cannot remove nodes")
	}
	if err := checkDrainTimeout(req.DrainTimeout); err != nil {
		return nil, err
	}
	var n *api.Node
	var draining bool
	err := s.update(ctx, func(tx *store.Tx) error {
		draining = false
		n = FindNode(tx, req.Node)
		if n == nil {
			return notFound("node", req.Node)
		}
		if !hostsReplicas(tx, n) {
			return nil
		}
		draining = true
		if lastManager(tx, n) {
			// Refused now rather than after moving every replica away.
			return reason.Error(codes.FailedPrecondition, reason.InvalidSpec,
				"%s is the last manager; a cluster cannot remove its last manager", n.Hostname)
		}
		if err := startDrain(tx, n, req.DrainTimeout, req.Force, true); err != nil {
			return err
		}
		return tx.Update(n)
	})
	if err != nil {
		return nil, apierror.ToStatus(err)
	}
	if draining {
		return &api.RemoveNodeResponse{Draining: true}, nil
	}
	if err := s.remover.RemoveNode(ctx, n); err != nil {
		return nil, apierror.ToStatus(err)
	}
	return &api.RemoveNodeResponse{}, nil
}

// lastManager: n is the cluster's only manager.
func lastManager(tx store.ReadTx, n *api.Node) bool {
	if n.Role != api.NodeRole_NODE_ROLE_MANAGER {
		return false
	}
	for _, o := range tx.ListNodes() {
		if o.Id != n.Id && o.Role == api.NodeRole_NODE_ROLE_MANAGER {
			return false
		}
	}
	return true
}
