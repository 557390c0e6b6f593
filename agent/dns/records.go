package dns

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"
)

// Records is one complete picture of what the node's DNS server answers.
// The agent builds it from its local view of the store and hands it over
// whole with SetRecords; the server never sees half of an update.
type Records struct {
	// Networks are all the networks the cluster knows, each with the
	// services attached to it.
	Networks []Network
	// Askers maps an address of a replica on this node to the names of
	// every network that replica is attached to. A replica on two
	// networks asks through one of its addresses yet sees the services
	// of both. An address not listed here is on the networks whose
	// subnets hold it.
	Askers map[netip.Addr][]string
}

// Network is one overlay network and its services.
type Network struct {
	Name string
	// Subnet holds the addresses of the network's replicas; a query from
	// one of them comes from a replica on this network.
	Subnet   netip.Prefix
	Services []Service
}

// Service is one service's entry on one network.
type Service struct {
	Name string
	// VIP is the service's virtual IP on this network. The zero Addr
	// means no VIP (endpoint mode dnsrr): NAME then answers with the
	// replicas' addresses, as tasks.NAME does.
	VIP netip.Addr
	// Tasks are the addresses on this network of the service's running
	// and healthy replicas.
	Tasks []netip.Addr
}

// entry is what one name answers with on one network.
type entry struct {
	vip   []netip.Addr // one address, or the tasks for dnsrr
	tasks []netip.Addr
}

type network struct {
	name     string
	subnet   netip.Prefix
	services map[string]entry
}

// table is the compiled, read-only form of Records that queries read.
type table struct {
	networks []*network          // sorted by name
	byName   map[string]*network // lower-case name
	services map[string]struct{} // every service name on any network
	askers   map[netip.Addr][]*network
}

// compile checks r and builds its lookup table. Names are matched
// case-insensitively, so they are stored in lower case.
func compile(r Records) (*table, error) {
	t := &table{
		byName:   make(map[string]*network, len(r.Networks)),
		services: make(map[string]struct{}),
		askers:   make(map[netip.Addr][]*network, len(r.Askers)),
	}
	for _, n := range r.Networks {
		name := strings.ToLower(n.Name)
		if err := checkName(name); err != nil {
			return nil, fmt.Errorf("network %q: %w", n.Name, err)
		}
		if _, dup := t.byName[name]; dup {
			return nil, fmt.Errorf("network %q given twice", n.Name)
		}
		if !n.Subnet.IsValid() {
			return nil, fmt.Errorf("network %q: no subnet", n.Name)
		}
		nw := &network{name: name, subnet: n.Subnet.Masked(), services: make(map[string]entry, len(n.Services))}
		for _, s := range n.Services {
			sname := strings.ToLower(s.Name)
			if err := checkName(sname); err != nil {
				return nil, fmt.Errorf("network %q: service %q: %w", n.Name, s.Name, err)
			}
			if _, dup := nw.services[sname]; dup {
				return nil, fmt.Errorf("network %q: service %q given twice", n.Name, s.Name)
			}
			e := entry{tasks: unmapAll(s.Tasks)}
			if s.VIP.IsValid() {
				e.vip = []netip.Addr{s.VIP.Unmap()}
			} else {
				e.vip = e.tasks
			}
			nw.services[sname] = e
			t.services[sname] = struct{}{}
		}
		t.byName[name] = nw
		t.networks = append(t.networks, nw)
	}
	slices.SortFunc(t.networks, func(a, b *network) int { return strings.Compare(a.name, b.name) })
	for addr, names := range r.Askers {
		var nws []*network
		for _, name := range names {
			nw, ok := t.byName[strings.ToLower(name)]
			if !ok {
				return nil, fmt.Errorf("asker %s: unknown network %q", addr, name)
			}
			nws = append(nws, nw)
		}
		t.askers[addr.Unmap()] = nws
	}
	return t, nil
}

// checkName refuses what cannot be a DNS label sequence: names are
// validated by the manager (docs/design.md §11), this only guards the
// table against an agent bug.
func checkName(name string) error {
	if name == "" || len(name) > 63 {
		return fmt.Errorf("name must have 1-63 characters")
	}
	if strings.HasPrefix(name, ".") || strings.HasSuffix(name, ".") || strings.Contains(name, "..") {
		return fmt.Errorf("name has an empty label")
	}
	return nil
}

func unmapAll(addrs []netip.Addr) []netip.Addr {
	out := make([]netip.Addr, 0, len(addrs))
	for _, a := range addrs {
		if a.IsValid() {
			out = append(out, a.Unmap())
		}
	}
	return out
}

// asker returns the networks the replica at addr is on: the listed ones,
// or else those whose subnet holds addr. The network whose subnet holds
// addr comes first: a name on several of the asker's networks resolves on
// the one it asked through.
func (t *table) asker(addr netip.Addr) []*network {
	addr = addr.Unmap()
	var out []*network
	for _, nw := range t.networks {
		if nw.subnet.Contains(addr) {
			out = append(out, nw)
		}
	}
	for _, nw := range t.askers[addr] {
		if !slices.Contains(out, nw) {
			out = append(out, nw)
		}
	}
	return out
}

// lookup answers name (lower case, no trailing dot) for the replica at
// asker. owned says whether the name is the server's to answer: it names
// a service known on any network, alone or followed by a known network's
// name, with or without "tasks.". An owned name the asker cannot see (it
// shares no network with the service) has no addresses. Other names are
// forwarded. Service and network names may hold dots, so every split of
// the name is tried.
func (t *table) lookup(asker netip.Addr, name string) (addrs []netip.Addr, owned bool) {
	if rest, ok := strings.CutPrefix(name, "tasks."); ok && t.owns(rest) {
		return t.resolve(asker, rest, true), true
	}
	if t.owns(name) {
		return t.resolve(asker, name, false), true
	}
	return nil, false
}

func (t *table) owns(name string) bool {
	if _, ok := t.services[name]; ok {
		return true
	}
	for i := 0; i < len(name); i++ {
		if name[i] != '.' {
			continue
		}
		if _, ok := t.services[name[:i]]; !ok {
			continue
		}
		if _, ok := t.byName[name[i+1:]]; ok {
			return true
		}
	}
	return false
}

func (t *table) resolve(asker netip.Addr, name string, tasks bool) []netip.Addr {
	nws := t.asker(asker)
	pick := func(e entry) []netip.Addr {
		if tasks {
			return e.tasks
		}
		return e.vip
	}
	// NAME on the asker's networks, the one it asked through first.
	for _, nw := range nws {
		if e, ok := nw.services[name]; ok {
			return pick(e)
		}
	}
	// NAME.NETWORK, only on a network the asker is on.
	for _, nw := range nws {
		svc, ok := strings.CutSuffix(name, "."+nw.name)
		if !ok {
			continue
		}
		if e, ok := nw.services[svc]; ok {
			return pick(e)
		}
	}
	return nil
}
