package controlapi

import (
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strconv"

	"google.golang.org/grpc/codes"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/api/identity"
	"github.com/jaco-project/jaco/api/limits"
	"github.com/jaco-project/jaco/api/reason"
	"github.com/jaco-project/jaco/manager/state/store"
)

// The routing mesh's network (docs/adr/0026): the cluster makes it, named
// api.IngressNetwork, in the write of the first service that publishes an
// ingress port, and services join it by publishing ports, never by
// naming it.

// validateIngress checks what a spec alone says about the mesh: it does
// not name the ingress network, and its replicas' networks, ingress
// included, stay within the per-service bound (an interface each).
func validateIngress(spec *api.ServiceSpec) error {
	if slices.Contains(spec.GetNetworks(), api.IngressNetwork) {
		return invalid("service %s: the %s network is the routing mesh's; a service joins it by publishing a port (-p), not with --network",
			spec.GetName(), api.IngressNetwork)
	}
	if n := len(api.TaskNetworks(spec)); n > limits.MaxServiceNetworks {
		return reason.Error(codes.ResourceExhausted, reason.LimitExceeded,
			"service %s: its %d networks and the %s network its published ports join are %d; the limit is %d",
			spec.GetName(), len(spec.GetNetworks()), api.IngressNetwork, n, limits.MaxServiceNetworks)
	}
	return nil
}

// portKey is a published port: protocol and number.
type portKey struct {
	protocol string
	port     uint32
}

func (k portKey) String() string { return fmt.Sprintf("%d/%s", k.port, k.protocol) }

func portOf(p *api.PortConfig) portKey {
	proto := p.GetProtocol()
	if proto == "" {
		proto = "tcp"
	}
	return portKey{proto, p.GetPublishedPort()}
}

// checkPublished refuses spec when a port it publishes collides with
// another service's: an ingress port is taken on every node, so no other
// service may publish it in either mode; two host-mode ports may share a
// number (the scheduler keeps their replicas on different nodes).
func checkPublished(tx store.ReadTx, spec *api.ServiceSpec) error {
	mine := map[portKey]bool{} // published port → ingress
	for _, p := range spec.GetPorts() {
		if p.GetPublishedPort() != 0 {
			mine[portOf(p)] = api.PublishedIngress(p)
		}
	}
	if len(mine) == 0 {
		return nil
	}
	for _, other := range tx.ListServices() {
		if other.GetSpec().GetName() == spec.GetName() {
			continue
		}
		for _, p := range other.GetSpec().GetPorts() {
			if p.GetPublishedPort() == 0 {
				continue
			}
			ingress, ok := mine[portOf(p)]
			if !ok || !ingress && !api.PublishedIngress(p) {
				continue
			}
			return invalid("service %s: port %s is published by service %s (%s mode); an ingress port is taken on every node, so no two services can share it",
				spec.GetName(), portOf(p), other.GetSpec().GetName(), modeName(p))
		}
	}
	return nil
}

// checkOwnPorts refuses an ingress port a node of the cluster listens on
// for jaco itself: the mesh takes the port on every node's addresses, so
// publishing a jacod's TCP port would cut the cluster off from it, and a
// node's WireGuard UDP port would cut its overlay.
func checkOwnPorts(tx store.ReadTx, spec *api.ServiceSpec) error {
	ingress := map[portKey]bool{}
	for _, p := range api.IngressPorts(spec) {
		ingress[portOf(p)] = true
	}
	if len(ingress) == 0 {
		return nil
	}
	for _, n := range tx.ListNodes() {
		own := map[portKey]string{}
		if _, port, err := net.SplitHostPort(n.GetAddress()); err == nil {
			if v, err := strconv.ParseUint(port, 10, 16); err == nil {
				own[portKey{"tcp", uint32(v)}] = "its jacod"
			}
		}
		if o := n.GetDescription().GetOverlay(); o.GetPort() != 0 {
			own[portKey{"udp", o.GetPort()}] = "its overlay link"
		}
		for k, what := range own {
			if ingress[k] {
				return invalid("service %s: port %s is where node %s listens for %s; an ingress port is taken on every node, so publish another (or -p mode=host)",
					spec.GetName(), k, n.GetHostname(), what)
			}
		}
	}
	return nil
}

func modeName(p *api.PortConfig) string {
	if api.PublishedIngress(p) {
		return "ingress"
	}
	return "host"
}

// ensureIngress creates the ingress network, in the caller's write, when
// spec publishes an ingress port and the network does not exist yet. A
// refusal later in the same write undoes it with everything else.
func ensureIngress(tx *store.Tx, spec *api.ServiceSpec) error {
	if len(api.IngressPorts(spec)) == 0 {
		return nil
	}
	if nw := tx.FindNetworkByName(api.IngressNetwork); nw != nil {
		if !nw.GetSpec().GetIngress() {
			// Only a store written before the name was reserved holds one.
			return invalid("service %s publishes an ingress port, but the network named %s is not the routing mesh's; remove it first",
				spec.GetName(), api.IngressNetwork)
		}
		return nil
	}
	id, err := identity.NewID()
	if err != nil {
		return fmt.Errorf("ingress network id: %w", err)
	}
	_, err = createNetworkTx(tx, id, &api.NetworkSpec{Name: api.IngressNetwork, Ingress: true}, netip.Prefix{})
	return err
}

// publishesIngress: spec publishes at least one port through the mesh.
func publishesIngress(spec *api.ServiceSpec) bool {
	return len(api.IngressPorts(spec)) > 0
}

// usesNetwork says whether spec attaches its replicas to network nw:
// names it, or, for the ingress network, publishes an ingress port.
func usesNetwork(spec *api.ServiceSpec, nw *api.Network) bool {
	if nw.GetSpec().GetIngress() {
		return publishesIngress(spec)
	}
	return slices.Contains(spec.GetNetworks(), nw.GetSpec().GetName())
}
