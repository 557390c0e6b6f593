package dispatcher

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/manager/state/store"
)

func overlayNetwork(id, name, subnet string) *api.Network {
	return &api.Network{Id: id, Meta: &api.Meta{}, Spec: &api.NetworkSpec{Name: name, Subnet: subnet}}
}

// netService is a service on networks (by name) with vips ("network id=address").
func netService(id string, mode api.EndpointMode, networks []string, vips ...string) *api.Service {
	s := &api.Service{Id: id, Meta: &api.Meta{}, Spec: &api.ServiceSpec{Name: "name-" + id, Networks: networks, EndpointMode: mode}}
	for _, v := range vips {
		nw, a, _ := strings.Cut(v, "=")
		s.VirtualIps = append(s.VirtualIps, &api.VirtualIP{NetworkId: nw, Address: a})
	}
	return s
}

// replicaTask is a task of service svc on node, desired and reported
// RUNNING, with addrs ("network id=address").
func replicaTask(id, svc, node string, addrs ...string) *api.Task {
	t := task(id, node, running, running)
	t.ServiceId = svc
	for _, a := range addrs {
		nw, ad, _ := strings.Cut(a, "=")
		t.Status.Addresses = append(t.Status.Addresses, &api.NetworkAddress{NetworkId: nw, Address: ad})
	}
	return t
}

func readyNode(id string, blocks ...string) *api.Node {
	n := workerNode(id)
	n.Status = &api.NodeStatus{State: api.NodeStatusState_NODE_STATUS_STATE_READY}
	for _, b := range blocks {
		nw, p, _ := strings.Cut(b, "=")
		n.OverlayBlocks = append(n.OverlayBlocks, &api.OverlayBlock{NetworkId: nw, Prefix: p})
	}
	return n
}

// endpointsSeen prints networks and endpoints as "networks | net/service
// vip [task@node=address ...]; ...".
func endpointsSeen(networks []*api.Network, eps []*api.ServiceEndpoint) string {
	var b strings.Builder
	for _, n := range networks {
		b.WriteString(n.Id + " ")
	}
	b.WriteString("|")
	for _, e := range eps {
		fmt.Fprintf(&b, " %s/%s %s [", e.NetworkId, e.ServiceId, e.VirtualIp)
		for i, r := range e.Replicas {
			if i > 0 {
				b.WriteString(" ")
			}
			fmt.Fprintf(&b, "%s@%s=%s", r.TaskId, r.NodeId, r.Address)
		}
		b.WriteString("];")
	}
	return b.String()
}

func TestEndpointTable(t *testing.T) {
	nets := []*api.Network{overlayNetwork("a", "front", "10.0.0.0/16"), overlayNetwork("b", "back", "10.1.0.0/16")}
	services := []*api.Service{
		netService("web", 0, []string{"front"}, "a=10.0.255.193"),
		netService("db", api.EndpointMode_ENDPOINT_MODE_DNSRR, []string{"back", "front"}, "a=10.0.255.250"),
		netService("off", 0, nil),
	}
	down := readyNode("n3", "a=10.0.0.128/26")
	down.Status.State = api.NodeStatusState_NODE_STATUS_STATE_DOWN
	nodes := []*api.Node{readyNode("n1", "a=10.0.0.0/26"), readyNode("n2", "a=10.0.0.64/26", "b=10.1.0.0/26"), down}
	starting := replicaTask("t5", "web", "n1", "a=10.0.0.5")
	starting.Status.State = assignedS
	stopping := replicaTask("t6", "web", "n1", "a=10.0.0.6")
	stopping.DesiredState = api.TaskState_TASK_STATE_SHUTDOWN
	tasks := []*api.Task{
		replicaTask("t2", "web", "n2", "a=10.0.0.66"),
		replicaTask("t1", "web", "n1", "a=10.0.0.2"),
		replicaTask("t3", "web", "n3", "a=10.0.0.130"), // its node is DOWN
		replicaTask("t4", "db", "n2", "a=10.0.0.67", "b=10.1.0.2"),
		starting, stopping,
	}
	tab := newEndpointTable()
	tab.reset(nets, services, slices.Values(tasks), nodes)

	for _, tc := range []struct {
		node, want string
	}{
		{"n1", "a | a/db  [t4@n2=10.0.0.67]; a/web 10.0.255.193 [t1@n1=10.0.0.2 t2@n2=10.0.0.66];"},
		{"n2", "a b | a/db  [t4@n2=10.0.0.67]; a/web 10.0.255.193 [t1@n1=10.0.0.2 t2@n2=10.0.0.66]; b/db  [t4@n2=10.1.0.2];"},
	} {
		var n *api.Node
		for _, x := range nodes {
			if x.Id == tc.node {
				n = x
			}
		}
		if got := endpointsSeen(tab.view(tab.versions(n))); got != tc.want {
			t.Errorf("%s sees %q\nwant      %q", tc.node, got, tc.want)
		}
	}

	// Each change bumps exactly the networks it touches.
	before := tab.versions(nodes[1])
	for _, tc := range []struct {
		what    string
		e       store.Event
		changed string
	}{
		{"a replica's state unchanged", store.Event{Kind: store.EventUpdate, Object: replicaTask("t1", "web", "n1", "a=10.0.0.2")}, ""},
		{"a replica on back ends", store.Event{Kind: store.EventDelete, Object: replicaTask("t4", "db", "n2")}, "[b a]"},
		{"a node comes back", store.Event{Kind: store.EventUpdate, Object: readyNode("n3")}, "[a]"},
		{"a service's status only", store.Event{Kind: store.EventUpdate, Object: netService("web", 0, []string{"front"}, "a=10.0.255.193")}, ""},
		{"a service leaves front", store.Event{Kind: store.EventUpdate, Object: netService("web", 0, nil)}, "[a]"},
	} {
		got := applyEndpointEvent(tab, tc.e)
		if (tc.changed == "" && len(got) != 0) || (tc.changed != "" && !sameSet(got, tc.changed)) {
			t.Errorf("%s: changed %v, want %s", tc.what, got, tc.changed)
		}
	}
	after := tab.versions(nodes[1])
	if before[0].version == after[0].version || before[1].version == after[1].version {
		t.Errorf("versions did not move: %v then %v", before, after)
	}
	if got, want := endpointsSeen(tab.view(after)), "a b | a/db  []; b/db  [];"; got != want {
		t.Errorf("after the changes n2 sees %q, want %q", got, want)
	}
}

func sameSet(got []string, want string) bool {
	seen := map[string]bool{}
	for _, g := range got {
		seen[g] = true
	}
	w := strings.Fields(strings.Trim(want, "[]"))
	if len(seen) != len(w) {
		return false
	}
	for _, x := range w {
		if !seen[x] {
			return false
		}
	}
	return true
}
