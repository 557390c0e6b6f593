// Package controlapi serves the Control service: what the CLI calls to read
// and change the cluster's declared state. Reads come from the local store;
// writes go through store.Update, which proposes them to raft. The
// raftproxy wrapper in front of it makes sure writes run on the leader.
package controlapi

import (
	"context"
	"slices"
	"strings"

	"google.golang.org/grpc/codes"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/api/reason"
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
}

// Option configures a Server.
type Option func(*Server)

// WithNodeRemover lets the server remove nodes.
func WithNodeRemover(r NodeRemover) Option { return func(s *Server) { s.remover = r } }

// New returns a Control server over st.
func New(st *store.Store, opts ...Option) *Server {
	s := &Server{store: st}
	for _, o := range opts {
		o(s)
	}
	return s
}

// ListNodes lists every node, sorted by hostname.
func (s *Server) ListNodes(context.Context, *api.ListNodesRequest) (*api.ListNodesResponse, error) {
	var nodes []*api.Node
	s.store.View(func(tx store.ReadTx) { nodes = tx.ListNodes() })
	slices.SortFunc(nodes, func(a, b *api.Node) int { return strings.Compare(a.Hostname, b.Hostname) })
	return &api.ListNodesResponse{Nodes: nodes}, nil
}

// GetNode finds a node by id or hostname.
func (s *Server) GetNode(_ context.Context, req *api.GetNodeRequest) (*api.GetNodeResponse, error) {
	var n *api.Node
	s.store.View(func(tx store.ReadTx) { n = FindNode(tx, req.Node) })
	if n == nil {
		return nil, reason.Error(codes.NotFound, reason.NotFound, "no node with id or name %q", req.Node)
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

// RemoveNode removes a node, named by id or hostname, from the cluster.
func (s *Server) RemoveNode(ctx context.Context, req *api.RemoveNodeRequest) (*api.RemoveNodeResponse, error) {
	if s.remover == nil {
		return nil, reason.Error(codes.Unimplemented, reason.NotAManager, "this server cannot remove nodes")
	}
	var n *api.Node
	s.store.View(func(tx store.ReadTx) { n = FindNode(tx, req.Node) })
	if n == nil {
		return nil, reason.Error(codes.NotFound, reason.NotFound, "no node with id or name %q", req.Node)
	}
	if err := s.remover.RemoveNode(ctx, n); err != nil {
		return nil, ToStatus(err)
	}
	return &api.RemoveNodeResponse{}, nil
}
