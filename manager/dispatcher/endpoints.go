package dispatcher

import (
	"iter"
	"slices"
	"strings"

	"google.golang.org/protobuf/proto"

	"github.com/jaco-project/jaco/api"
)

// endpointTable is every service's endpoints on every network as the store
// has them, kept by the dispatcher so each session can send its agent the
// endpoints of the networks it holds a block of, at once when one changes
// (docs/adr/0026): its DNS answers and VIP rules follow them. Each network
// carries a version, bumped by any change to it or to its endpoints, so a
// session compares a few numbers to know whether to send again, and each
// network's endpoints are built once per version, whatever the number of
// sessions. Guarded by Server.mu.
type endpointTable struct {
	networks map[string]*api.Network // by id
	services map[string]*api.Service // by id
	// byNetwork: service ids by the network names of their specs.
	byNetwork map[string]map[string]bool
	replicas  map[string]replica         // by task id
	byService map[string]map[string]bool // task ids by service id
	up        map[string]bool            // nodes present and not DOWN

	version map[string]uint64 // by network id
	last    uint64            // the latest version given
	built   map[string]builtEndpoints
}

// replica is a task that serves its service: desired and reported
// RUNNING, with addresses.
type replica struct {
	serviceID, nodeID string
	addrs             map[string]string // network id → address
}

type builtEndpoints struct {
	version   uint64
	endpoints []*api.ServiceEndpoint
}

// netVersion is a network as a session last sent it.
type netVersion struct {
	id      string
	version uint64
}

func newEndpointTable() *endpointTable {
	return &endpointTable{networks: map[string]*api.Network{}, services: map[string]*api.Service{},
		byNetwork: map[string]map[string]bool{}, replicas: map[string]replica{},
		byService: map[string]map[string]bool{}, up: map[string]bool{},
		version: map[string]uint64{}, built: map[string]builtEndpoints{}}
}

// reset replaces the whole table (the start of a term, a store restore).
func (e *endpointTable) reset(networks []*api.Network, services []*api.Service, tasks iter.Seq[*api.Task], nodes []*api.Node) {
	last := e.last
	*e = *newEndpointTable()
	e.last = last
	for _, n := range networks {
		e.setNetwork(n)
	}
	for _, s := range services {
		e.setService(s)
	}
	for t := range tasks {
		e.setTask(t)
	}
	for _, n := range nodes {
		e.setNode(n)
	}
}

// bump gives network id a new version; it reports whether the network is
// known (a change to an unknown one is nobody's news).
func (e *endpointTable) bump(id string) bool {
	if e.networks[id] == nil {
		return false
	}
	e.last++
	e.version[id] = e.last
	delete(e.built, id)
	return true
}

// bumpNamed bumps the networks named names; it returns those bumped.
func (e *endpointTable) bumpNamed(names []string) []string {
	var ids []string
	for _, n := range e.networks {
		if slices.Contains(names, n.GetSpec().GetName()) && e.bump(n.GetId()) {
			ids = append(ids, n.GetId())
		}
	}
	return ids
}

// setNetwork records a created or changed network; it returns the networks
// whose view changed.
func (e *endpointTable) setNetwork(n *api.Network) []string {
	if old := e.networks[n.GetId()]; old != nil && proto.Equal(old, n) {
		return nil
	}
	e.networks[n.GetId()] = n
	e.bump(n.GetId())
	return []string{n.GetId()}
}

func (e *endpointTable) removeNetwork(id string) []string {
	if e.networks[id] == nil {
		return nil
	}
	delete(e.networks, id)
	delete(e.version, id)
	delete(e.built, id)
	return []string{id}
}

// setService records a created or changed service; it returns the
// networks whose endpoints changed (those of its old and new spec).
func (e *endpointTable) setService(s *api.Service) []string {
	old := e.services[s.GetId()]
	if old != nil && sameEndpointFields(old, s) {
		e.services[s.GetId()] = s
		return nil
	}
	names := e.unindex(old)
	e.services[s.GetId()] = s
	for _, name := range api.TaskNetworks(s.GetSpec()) {
		if e.byNetwork[name] == nil {
			e.byNetwork[name] = map[string]bool{}
		}
		e.byNetwork[name][s.GetId()] = true
	}
	return e.bumpNamed(append(names, api.TaskNetworks(s.GetSpec())...))
}

func (e *endpointTable) removeService(id string) []string {
	old := e.services[id]
	if old == nil {
		return nil
	}
	delete(e.services, id)
	return e.bumpNamed(e.unindex(old))
}

// unindex drops s from byNetwork and returns its network names.
func (e *endpointTable) unindex(s *api.Service) []string {
	names := api.TaskNetworks(s.GetSpec())
	for _, name := range names {
		delete(e.byNetwork[name], s.GetId())
		if len(e.byNetwork[name]) == 0 {
			delete(e.byNetwork, name)
		}
	}
	return slices.Clone(names)
}

// sameEndpointFields: nothing an endpoint shows differs between a and b.
func sameEndpointFields(a, b *api.Service) bool {
	return a.GetSpec().GetName() == b.GetSpec().GetName() &&
		a.GetSpec().GetEndpointMode() == b.GetSpec().GetEndpointMode() &&
		slices.Equal(api.TaskNetworks(a.GetSpec()), api.TaskNetworks(b.GetSpec())) &&
		slices.EqualFunc(api.IngressPorts(a.GetSpec()), api.IngressPorts(b.GetSpec()), func(x, y *api.PortConfig) bool { return proto.Equal(x, y) }) &&
		slices.EqualFunc(a.GetVirtualIps(), b.GetVirtualIps(), func(x, y *api.VirtualIP) bool { return proto.Equal(x, y) })
}

// sortedIDs is the keys of m in order.
func sortedIDs[V any](m map[string]V) []string {
	ids := make([]string, 0, len(m))
	for id := range m {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

func byServiceName(a, b *api.ServiceEndpoint) int {
	if c := strings.Compare(a.ServiceName, b.ServiceName); c != 0 {
		return c
	}
	return strings.Compare(a.ServiceId, b.ServiceId)
}
