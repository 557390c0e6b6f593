package scheduler

import (
	"fmt"
	"strings"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/manager/placement"
)

// resources is a reservation or a capacity.
type resources struct{ cpu, mem int64 }

func resourcesOf(r *api.Resources) resources {
	return resources{cpu: r.GetNanoCpus(), mem: r.GetMemoryBytes()}
}

// portKey is a published host port.
type portKey struct {
	protocol string
	port     uint32
}

// publishedPorts are the host-mode ports of spec: each binds its node's
// port, so at most one replica per node holds it. Ingress ports are the
// mesh's on every node whatever runs there (the Control API keeps them
// one service's in the cluster), so they exclude nothing.
func publishedPorts(spec *api.ServiceSpec) []portKey {
	var out []portKey
	for _, p := range spec.GetPorts() {
		if !api.PublishedHost(p) {
			continue
		}
		proto := p.GetProtocol()
		if proto == "" {
			proto = "tcp"
		}
		out = append(out, portKey{proto, p.GetPublishedPort()})
	}
	return out
}

// needs is what the filters and the spread need of one service's
// spec, parsed once per batch.
type needs struct {
	serviceID   string
	runtime     string
	constraints []placement.Constraint
	spread      []placement.Attribute
	pin         string
	need        resources
	ports       []portKey
	// networked: the replicas attach to overlay networks, the ingress
	// network included (api.TaskNetworks).
	networked bool
}

func newNeeds(serviceID string, spec *api.ServiceSpec) (*needs, error) {
	cons, err := placement.ParseConstraints(spec.GetPlacement().GetConstraints())
	if err != nil {
		return nil, err
	}
	spread, err := placement.ParseSpread(spec.GetPlacement().GetSpread())
	if err != nil {
		return nil, err
	}
	p := &needs{
		serviceID:   serviceID,
		constraints: cons,
		spread:      spread,
		pin:         spec.GetPlacement().GetPinNode(),
		need:        resourcesOf(spec.GetReservations()),
		ports:       publishedPorts(spec),
		networked:   len(api.TaskNetworks(spec)) > 0,
	}
	p.runtime = placement.RuntimeOf(spec)
	return p, nil
}

// exclusion is the filter that turned a node down, in the order the
// filters run (and the order the pending message lists them).
type exclusion int

const (
	exNone exclusion = iota - 1
	exUnavailable
	exIsolation
	exOverlay
	exPin
	exRuntime
	exConstraints
	exCPU
	exMemory
	exContainerSlots
	exPorts
	numExclusions
)

var exclusionPhrase = [numExclusions]string{
	exUnavailable:    "not available for new tasks",
	exIsolation:      "without network isolation",
	exOverlay:        "without a working overlay",
	exPin:            "not the pinned node",
	exRuntime:        "without the replica's runtime",
	exConstraints:    "not satisfying the constraints",
	exCPU:            "with insufficient CPU",
	exMemory:         "with insufficient memory",
	exContainerSlots: "with no container address left",
	exPorts:          "with a published port already in use",
}

// check runs the filters on one node and returns the first that fails.
func (p *needs) check(ni *nodeInfo) exclusion {
	if !ni.available {
		return exUnavailable
	}
	n := ni.node
	// A node that could not load its isolation ruleset runs no replicas
	// of any runtime (docs/design.md §9, isolation_unavailable).
	if n.GetDescription().GetIsolationUnavailable() {
		return exIsolation
	}
	if p.networked && !hasOverlay(n) {
		return exOverlay
	}
	if !placement.PinAllows(p.pin, n) {
		return exPin
	}
	if !placement.SupportsRuntime(n, p.runtime) {
		return exRuntime
	}
	for _, c := range p.constraints {
		if !c.Matches(n) {
			return exConstraints
		}
	}
	return p.checkRoom(ni)
}

// checkRoom runs the filters that change as replicas are placed:
// resources, container addresses and ports.
func (p *needs) checkRoom(ni *nodeInfo) exclusion {
	if p.need.cpu > 0 && ni.reserved.cpu+p.need.cpu > ni.capacity.cpu {
		return exCPU
	}
	if p.need.mem > 0 && ni.reserved.mem+p.need.mem > ni.capacity.mem {
		return exMemory
	}
	if p.runtime == placement.RuntimeContainerd && ni.containerSlots > 0 && ni.containers >= ni.containerSlots {
		return exContainerSlots
	}
	if len(p.ports) == 0 {
		return exNone
	}
	for _, port := range p.ports {
		if ni.ports[port] > 0 {
			return exPorts
		}
	}
	return exNone
}

// hasOverlay: the node published a working overlay end, so replicas on
// networks can reach and be reached from other nodes (docs/adr/0026).
func hasOverlay(n *api.Node) bool {
	o := n.GetDescription().GetOverlay()
	return o != nil && !o.GetUnavailable()
}

// exclusionCounts tallies, per filter, the nodes it turned down.
type exclusionCounts [numExclusions]int

// message is the pending message for a replica no node took, e.g.
// "no suitable node (3 nodes not available for new tasks; 2 nodes with
// insufficient memory)".
func (c *exclusionCounts) message(p *needs, nodes int) string {
	if nodes == 0 {
		return "no suitable node (the cluster has no nodes)"
	}
	var parts []string
	for ex, n := range c {
		if n == 0 {
			continue
		}
		phrase := exclusionPhrase[ex]
		switch exclusion(ex) {
		case exPin:
			phrase = fmt.Sprintf("not the pinned node %q", p.pin)
		case exRuntime:
			phrase = fmt.Sprintf("without the %s runtime", p.runtime)
		}
		parts = append(parts, fmt.Sprintf("%s %s", plural(n, "node"), phrase))
	}
	if len(parts) == 0 {
		// Every node passed the filters but the service's own replicas
		// took the room in this batch; the next batch says which filter.
		return "no suitable node (all eligible nodes were filled in this round)"
	}
	return "no suitable node (" + strings.Join(parts, "; ") + ")"
}

func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return fmt.Sprintf("%d %ss", n, word)
}
