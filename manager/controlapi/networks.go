package controlapi

import (
	"context"
	"errors"
	"net/netip"
	"slices"
	"strings"

	"google.golang.org/grpc/codes"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/api/identity"
	"github.com/jaco-project/jaco/api/ipam"
	"github.com/jaco-project/jaco/api/limits"
	"github.com/jaco-project/jaco/api/reason"
	"github.com/jaco-project/jaco/manager/apierror"
	"github.com/jaco-project/jaco/manager/state/store"
)

// CreateNetwork records an overlay network. Its subnet is the one asked
// for or the lowest free one of the cluster's pool, chosen in the write
// itself so two creates can never get overlapping subnets
// (docs/adr/0026).
func (s *Server) CreateNetwork(ctx context.Context, req *api.CreateNetworkRequest) (*api.CreateNetworkResponse, error) {
	spec := req.GetSpec()
	asked, err := checkNetworkSpec(spec)
	if err != nil {
		return nil, err
	}
	id, err := identity.NewID()
	if err != nil {
		return nil, apierror.ToStatus(err)
	}
	err = s.update(ctx, func(tx *store.Tx) error {
		_, err := createNetworkTx(tx, id, &api.NetworkSpec{Name: spec.Name, Labels: spec.Labels}, asked)
		return err
	})
	if err != nil {
		return nil, apierror.ToStatus(err)
	}
	var stored *api.Network
	s.store.View(func(tx store.ReadTx) { stored = tx.GetNetwork(id) })
	return &api.CreateNetworkResponse{Network: stored}, nil
}

// checkNetworkSpec refuses a spec CreateNetwork (or DeployStack) would
// not record, and returns the subnet it asks for (invalid: none).
func checkNetworkSpec(spec *api.NetworkSpec) (netip.Prefix, error) {
	if spec == nil {
		return netip.Prefix{}, invalid("no network spec")
	}
	if err := checkName("network", spec.Name); err != nil {
		return netip.Prefix{}, err
	}
	if spec.Name == api.IngressNetwork || spec.Ingress {
		return netip.Prefix{}, invalid("the %s network is the routing mesh's: the cluster makes it with the first service publishing a port (-p), and no other network can be it",
			api.IngressNetwork)
	}
	var asked netip.Prefix
	if spec.Subnet != "" {
		p, err := ipam.ParseSubnet(spec.Subnet)
		if err != nil {
			return netip.Prefix{}, invalid("network %s: %v", spec.Name, err)
		}
		asked = p
	}
	return asked, checkLabels(spec.Labels)
}

// createNetworkTx records network id of spec (its name, labels and
// ingress flag; the subnet is asked, or chosen from the pool) in tx.
func createNetworkTx(tx *store.Tx, id string, spec *api.NetworkSpec, asked netip.Prefix) (*api.Network, error) {
	if tx.FindNetworkByName(spec.Name) != nil {
		return nil, reason.Error(codes.AlreadyExists, reason.AlreadyExists, "a network named %s exists already", spec.Name)
	}
	networks := tx.ListNetworks()
	if len(networks) >= limits.MaxNetworks {
		return nil, reason.Error(codes.ResourceExhausted, reason.LimitExceeded,
			"network %s: the cluster holds %d networks, the limit", spec.Name, len(networks))
	}
	subnet, err := chooseSubnet(tx.Cluster(), spec.Name, asked, networks)
	if err != nil {
		return nil, err
	}
	nw := &api.Network{Id: id, Meta: &api.Meta{}, Spec: &api.NetworkSpec{Name: spec.Name, Subnet: subnet.String(), Ingress: spec.Ingress, Labels: spec.Labels}}
	return nw, tx.Create(nw)
}

// chooseSubnet checks asked against the other networks' subnets, or, when
// nothing was asked, takes a free one from the cluster's pool.
func chooseSubnet(c *api.Cluster, name string, asked netip.Prefix, networks []*api.Network) (netip.Prefix, error) {
	taken := make([]netip.Prefix, 0, len(networks))
	owner := map[netip.Prefix]string{}
	for _, n := range networks {
		p, err := netip.ParsePrefix(n.GetSpec().GetSubnet())
		if err != nil {
			continue // stored by this code, always valid
		}
		taken = append(taken, p)
		owner[p] = n.GetSpec().GetName()
	}
	if asked.IsValid() {
		if p, ok := ipam.Overlapping(asked, taken); ok {
			return netip.Prefix{}, invalid("network %s: subnet %s overlaps %s of network %s", name, asked, p, owner[p])
		}
		return asked, nil
	}
	pool := ipam.DefaultPool
	if c.GetOverlayPool() != "" {
		p, err := ipam.ParsePool(c.GetOverlayPool())
		if err != nil {
			return netip.Prefix{}, invalid("the cluster's overlay pool: %v", err)
		}
		pool = p
	}
	p, err := ipam.Allocate(pool, ipam.NetworkBits(pool), taken)
	if errors.Is(err, ipam.ErrExhausted) {
		return netip.Prefix{}, reason.Error(codes.ResourceExhausted, reason.LimitExceeded,
			"network %s: the overlay pool %s has no free /%d left; give --subnet outside it", name, pool, ipam.NetworkBits(pool))
	}
	if err != nil {
		return netip.Prefix{}, invalid("network %s: %v", name, err)
	}
	return p, nil
}

// RemoveNetwork deletes a network no service names, in its spec or in
// the spec it would roll back to.
func (s *Server) RemoveNetwork(ctx context.Context, req *api.RemoveNetworkRequest) (*api.RemoveNetworkResponse, error) {
	err := s.update(ctx, func(tx *store.Tx) error {
		nw := findNetwork(tx, req.Network)
		if nw == nil {
			return notFound("network", req.Network)
		}
		if users := networkUsers(tx, nw, true); len(users) > 0 {
			return reason.Error(codes.FailedPrecondition, reason.NetworkInUse,
				"network %s is used by services %s: remove them or update them off it first", nw.Spec.Name, strings.Join(users, ", "))
		}
		return tx.Delete(nw)
	})
	if err != nil {
		return nil, apierror.ToStatus(err)
	}
	return &api.RemoveNetworkResponse{}, nil
}

// GetNetwork returns a network and the services attached to it.
func (s *Server) GetNetwork(_ context.Context, req *api.GetNetworkRequest) (*api.GetNetworkResponse, error) {
	resp := &api.GetNetworkResponse{}
	s.store.View(func(tx store.ReadTx) {
		if resp.Network = findNetwork(tx, req.Network); resp.Network != nil {
			resp.Services = networkUsers(tx, resp.Network, false)
			resp.Peers = networkPeers(tx, resp.Network.Id)
		}
	})
	if resp.Network == nil {
		return nil, notFound("network", req.Network)
	}
	return resp, nil
}

// ListNetworks lists every network in the local store, in id order.
func (s *Server) ListNetworks(_ context.Context, _ *api.ListNetworksRequest) (*api.ListNetworksResponse, error) {
	resp := &api.ListNetworksResponse{}
	s.store.View(func(tx store.ReadTx) { resp.Networks = tx.ListNetworks() })
	return resp, nil
}

// findNetwork resolves a network's id, or else its name.
func findNetwork(tx store.ReadTx, idOrName string) *api.Network {
	if nw := tx.GetNetwork(idOrName); nw != nil {
		return nw
	}
	return tx.FindNetworkByName(idOrName)
}

// networkPeers are the nodes holding a block of network id, by node id.
func networkPeers(tx store.ReadTx, id string) []*api.NetworkPeer {
	var peers []*api.NetworkPeer
	for _, n := range tx.ListNodes() {
		for _, b := range n.GetOverlayBlocks() {
			if b.GetNetworkId() != id {
				continue
			}
			p := &api.NetworkPeer{NodeId: n.GetId(), Hostname: n.GetHostname(), Block: b.GetPrefix()}
			p.Endpoint, _ = api.OverlayEndpointOf(n)
			if o := n.GetDescription().GetOverlay(); o.GetUnavailable() {
				p.OverlayMessage = o.GetMessage()
			}
			peers = append(peers, p)
		}
	}
	slices.SortFunc(peers, func(a, b *api.NetworkPeer) int { return strings.Compare(a.NodeId, b.NodeId) })
	return peers
}

// networkUsers names the services whose spec attaches to nw (and, with
// previous, those whose previous spec does), sorted: those naming it, or,
// for the ingress network, those publishing an ingress port.
func networkUsers(tx store.ReadTx, nw *api.Network, previous bool) []string {
	var users []string
	for _, svc := range tx.ListServices() {
		if usesNetwork(svc.GetSpec(), nw) ||
			previous && svc.GetPreviousSpec() != nil && usesNetwork(svc.GetPreviousSpec(), nw) {
			users = append(users, svc.GetSpec().GetName())
		}
	}
	slices.Sort(users)
	return users
}

// checkNetworks refuses a spec naming a network that does not exist.
func checkNetworks(tx store.ReadTx, spec *api.ServiceSpec) error {
	for _, n := range spec.GetNetworks() {
		if tx.FindNetworkByName(n) == nil {
			return reason.Error(codes.NotFound, reason.NotFound, "service %s: no network named %q (jaco network create %s)", spec.GetName(), n, n)
		}
	}
	return nil
}
