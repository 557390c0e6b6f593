package netalloc

import (
	"net/netip"
	"slices"
	"strings"

	"google.golang.org/protobuf/proto"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/api/ipam"
)

// vipShortage is a service that needs a virtual IP on a network whose VIP
// block has none left.
type vipShortage struct {
	serviceID, network string
}

// wantsVIPs says whether a service is found by virtual IPs (the default
// endpoint mode) rather than by DNS round robin.
func wantsVIPs(spec *api.ServiceSpec) bool {
	return spec.GetEndpointMode() != api.EndpointMode_ENDPOINT_MODE_DNSRR
}

// planVIPs returns the services whose virtual IPs must change, with their
// new lists, and the VIPs it could not give. A service under the VIP
// endpoint mode has one address per network of its spec, in the spec's
// order, from the network's VIP block (ipam.VIPBlock). An address a
// service holds is kept while the network stays in its spec, so
// connections to it survive updates and leader changes; the rest go back:
// a network gone from the spec or from the store, a service in DNSRR mode.
// A deleted service's addresses are free because it is no longer listed.
func planVIPs(networks []*api.Network, services []*api.Service) ([]*api.Service, []vipShortage) {
	byName := make(map[string]*api.Network, len(networks))
	for _, n := range networks {
		byName[n.GetSpec().GetName()] = n
	}
	// Sorted so that, should two services ever claim one address, the
	// same one keeps it on every leader.
	services = slices.SortedFunc(slices.Values(services), func(a, b *api.Service) int { return strings.Compare(a.GetId(), b.GetId()) })

	// kept[service][network id] are the held addresses that stay;
	// taken[network id] every address in use.
	kept := make(map[string]map[string]netip.Addr, len(services))
	taken := map[string]map[netip.Addr]bool{}
	for _, s := range services {
		wanted := wantedNetworks(s.GetSpec(), byName)
		for _, v := range s.GetVirtualIps() {
			nw := wanted[v.GetNetworkId()]
			a, err := netip.ParseAddr(v.GetAddress())
			if nw == nil || err != nil || !usableVIP(nw, a) || taken[v.GetNetworkId()][a] {
				continue
			}
			if kept[s.GetId()] == nil {
				kept[s.GetId()] = map[string]netip.Addr{}
			}
			kept[s.GetId()][v.GetNetworkId()] = a
			if taken[v.GetNetworkId()] == nil {
				taken[v.GetNetworkId()] = map[netip.Addr]bool{}
			}
			taken[v.GetNetworkId()][a] = true
		}
	}

	var changed []*api.Service
	var short []vipShortage
	for _, s := range services {
		var vips []*api.VirtualIP
		wanted := wantedNetworks(s.GetSpec(), byName)
		for _, name := range s.GetSpec().GetNetworks() {
			nw := byName[name]
			if nw == nil || wanted[nw.GetId()] == nil || slices.ContainsFunc(vips, func(v *api.VirtualIP) bool { return v.NetworkId == nw.GetId() }) {
				continue
			}
			a, ok := kept[s.GetId()][nw.GetId()]
			if !ok {
				if a, ok = freeVIP(nw, taken[nw.GetId()]); !ok {
					short = append(short, vipShortage{serviceID: s.GetId(), network: name})
					continue
				}
				if taken[nw.GetId()] == nil {
					taken[nw.GetId()] = map[netip.Addr]bool{}
				}
				taken[nw.GetId()][a] = true
			}
			vips = append(vips, &api.VirtualIP{NetworkId: nw.GetId(), Address: a.String()})
		}
		if !slices.EqualFunc(vips, s.GetVirtualIps(), func(x, y *api.VirtualIP) bool { return proto.Equal(x, y) }) {
			upd := proto.CloneOf(s)
			upd.VirtualIps = vips
			changed = append(changed, upd)
		}
	}
	return changed, short
}

// wantedNetworks are the networks, by id, a service needs a VIP on: those
// of its spec that exist, none under DNSRR, and never the ingress network
// (the mesh forwards published ports straight to replicas).
func wantedNetworks(spec *api.ServiceSpec, byName map[string]*api.Network) map[string]*api.Network {
	if !wantsVIPs(spec) {
		return nil
	}
	out := map[string]*api.Network{}
	for _, name := range spec.GetNetworks() {
		if nw := byName[name]; nw != nil && !nw.GetSpec().GetIngress() {
			out[nw.GetId()] = nw
		}
	}
	return out
}

// vipRange is the addresses of a network's VIP block that may be given:
// all but the block's first and last (the last is the subnet's broadcast
// address), so 62 services per network.
func vipRange(nw *api.Network) (first, last netip.Addr, ok bool) {
	subnet, err := netip.ParsePrefix(nw.GetSpec().GetSubnet())
	if err != nil || !subnet.Addr().Is4() {
		return first, last, false
	}
	block := ipam.VIPBlock(subnet)
	first = block.Addr().Next()
	last = first
	for n := 1<<(32-block.Bits()) - 3; n > 0; n-- {
		last = last.Next()
	}
	return first, last, true
}

func usableVIP(nw *api.Network, a netip.Addr) bool {
	first, last, ok := vipRange(nw)
	return ok && a.Compare(first) >= 0 && a.Compare(last) <= 0
}

// freeVIP is the lowest usable address of nw's VIP block not in taken.
func freeVIP(nw *api.Network, taken map[netip.Addr]bool) (netip.Addr, bool) {
	first, last, ok := vipRange(nw)
	if !ok {
		return netip.Addr{}, false
	}
	for a := first; a.Compare(last) <= 0; a = a.Next() {
		if !taken[a] {
			return a, true
		}
	}
	return netip.Addr{}, false
}
