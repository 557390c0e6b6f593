package netalloc

import (
	"github.com/jaco-project/jaco/api"
)

// The routing mesh (docs/adr/0026): every node that can carry overlay
// traffic publishes every ingress port, forwarding connections to the
// service's replicas over the ingress network from its own address there,
// so each such node holds a block of the ingress network while any
// service publishes an ingress port, replicas or not.

// meshNode says whether n can take part in the mesh: the rule the
// dispatcher's peer list and the scheduler follow, an overlay end
// published and working, and isolation available.
func meshNode(n *api.Node) bool {
	_, ok := api.OverlayEndpointOf(n)
	return ok && !n.GetDescription().GetIsolationUnavailable()
}

// ingressNetwork is the routing mesh's network among networks, or nil.
func ingressNetwork(networks []*api.Network) *api.Network {
	for _, n := range networks {
		if n.GetSpec().GetIngress() {
			return n
		}
	}
	return nil
}

// meshInUse says whether any service publishes an ingress port.
func meshInUse(services []*api.Service) bool {
	for _, s := range services {
		if len(api.IngressPorts(s.GetSpec())) > 0 {
			return true
		}
	}
	return false
}
