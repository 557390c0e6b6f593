package membership

import (
	"context"
	"errors"
	"fmt"
	"net"

	"google.golang.org/grpc/codes"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/api/identity"
	"github.com/jaco-project/jaco/api/nodename"
	"github.com/jaco-project/jaco/api/reason"
	"github.com/jaco-project/jaco/ca"
	"github.com/jaco-project/jaco/manager/state/store"
)

// UpdateAddress is the leader side of a manager restarted with a new
// --advertise-addr (docs/adr/0038): the member to move is the one the
// caller's manager certificate names, never one the request names, so a
// manager can move only itself. The raft member is rewritten first (a
// ConfChangeUpdateNode every member applies to its member list and its
// transport, which redials), then the Node object. Asking again for the
// address already held changes nothing, so the caller simply retries
// until its own store shows the new address.
func (s *Server) UpdateAddress(ctx context.Context, req *api.UpdateAddressRequest) (*api.UpdateAddressResponse, error) {
	id, ok := identity.FromContext(ctx)
	if !ok || id.Kind != identity.Node || id.Role != ca.RoleManager || id.NodeID == "" {
		return nil, reason.Error(codes.PermissionDenied, reason.PermissionDenied, "a manager moves its own raft member, with its manager certificate")
	}
	if err := validateAddress(req.Address); err != nil {
		return nil, err
	}
	cluster, err := s.cluster()
	if err != nil {
		return nil, err
	}
	var node *api.Node
	s.store.View(func(tx store.ReadTx) { node = tx.GetNode(id.NodeID) })
	if node == nil {
		return nil, reason.Error(codes.PermissionDenied, reason.NodeRemoved, "node %s is not in the cluster: it was removed", id.NodeID)
	}
	if holder := s.holderOf(req.Address, node); holder != "" {
		return nil, reason.Error(codes.FailedPrecondition, reason.AddressInUse,
			"%s cannot move to %s: %s is recorded at that address; move or remove it first", node.Hostname, req.Address, holder)
	}
	if _, err := s.readdress(ctx, cluster, node, req.Address); err != nil {
		return nil, err
	}
	return &api.UpdateAddressResponse{Members: s.raft.Members()}, nil
}

// holderOf names the node or raft member, other than self, recorded at
// addr ("" when none is): two members at one address would each receive
// the other's raft messages.
func (s *Server) holderOf(addr string, self *api.Node) string {
	holder := ""
	s.store.View(func(tx store.ReadTx) {
		for _, n := range tx.ListNodes() {
			if n.Id != self.Id && n.Address == addr {
				holder = fmt.Sprintf("node %s (%s)", n.Hostname, n.Id)
			}
		}
	})
	for _, m := range s.raft.Members() {
		if holder == "" && m.RaftId != self.RaftId && m.Address == addr {
			holder = fmt.Sprintf("raft member %x (node %s)", m.RaftId, m.NodeId)
		}
	}
	return holder
}

var (
	errNoHostOrPort = errors.New("want host:port, both given")
	errWildcard     = errors.New("a wildcard address cannot be dialled by peers")
)

// validateAddress checks an advertise address: host:port, both given,
// and not a wildcard (peers could not dial it).
func validateAddress(address string) error {
	host, port, err := net.SplitHostPort(address)
	if err == nil && (host == "" || port == "") {
		err = errNoHostOrPort
	}
	if ip := net.ParseIP(host); err == nil && ip != nil && ip.IsUnspecified() {
		err = errWildcard
	}
	if err != nil {
		return reason.Error(codes.InvalidArgument, reason.InvalidSpec, "advertise address %s: %v", nodename.Quote(address), err)
	}
	return nil
}
