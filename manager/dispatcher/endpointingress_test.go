package dispatcher

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/manager/state/store"
)

func ingressOverlay() *api.Network {
	n := overlayNetwork("i", api.IngressNetwork, "198.19.0.0/20")
	n.Spec.Ingress = true
	return n
}

// publishing makes s publish ports ("published:target[/mode]", mode host
// or ingress by default).
func publishing(s *api.Service, ports ...string) *api.Service {
	for _, p := range ports {
		var pub, target uint32
		spec, mode, _ := strings.Cut(p, "/")
		fmt.Sscanf(spec, "%d:%d", &pub, &target)
		pc := &api.PortConfig{PublishedPort: pub, TargetPort: target}
		if mode == "host" {
			pc.PublishMode = api.PublishMode_PUBLISH_MODE_HOST
		}
		s.Spec.Ports = append(s.Spec.Ports, pc)
	}
	return s
}

// portsSeen prints each endpoint's ports as "net/service published:target ...;".
func portsSeen(eps []*api.ServiceEndpoint) string {
	var b strings.Builder
	for _, e := range eps {
		fmt.Fprintf(&b, "%s/%s", e.NetworkId, e.ServiceId)
		for _, p := range e.Ports {
			fmt.Fprintf(&b, " %d:%d", p.PublishedPort, p.TargetPort)
		}
		b.WriteString(";")
	}
	return b.String()
}

// TestIngressEndpoints: a service publishing through the mesh is on the
// ingress network without naming it; its endpoint there carries its
// ingress ports (not its host ones) and no VIP; a node holding only an
// ingress block (it runs no replica) sees it.
func TestIngressEndpoints(t *testing.T) {
	nets := []*api.Network{overlayNetwork("a", "front", "10.0.0.0/16"), ingressOverlay()}
	// web's stray VIP on the ingress network is never shown.
	services := []*api.Service{
		publishing(netService("web", 0, []string{"front"}, "a=10.0.255.193", "i=198.19.15.193"), "8080:80", "9090:90/host"),
		publishing(netService("hosted", 0, nil), "7070:70/host"),
	}
	nodes := []*api.Node{readyNode("n1", "i=198.19.0.0/26"), readyNode("n2", "a=10.0.0.64/26", "i=198.19.0.64/26")}
	tasks := []*api.Task{replicaTask("t1", "web", "n2", "a=10.0.0.66", "i=198.19.0.66")}
	tab := newEndpointTable()
	tab.reset(nets, services, slices.Values(tasks), nodes)

	networks, eps := tab.view(tab.versions(nodes[0]))
	if got, want := endpointsSeen(networks, eps), "i | i/web  [t1@n2=198.19.0.66];"; got != want {
		t.Fatalf("n1 (ingress block only) sees %q, want %q", got, want)
	}
	if got, want := portsSeen(eps), "i/web 8080:80;"; got != want {
		t.Fatalf("n1's ingress ports %q, want %q", got, want)
	}
	networks, eps = tab.view(tab.versions(nodes[1]))
	if got, want := endpointsSeen(networks, eps), "a i | a/web 10.0.255.193 [t1@n2=10.0.0.66]; i/web  [t1@n2=198.19.0.66];"; got != want {
		t.Fatalf("n2 sees %q, want %q", got, want)
	}
	if got, want := portsSeen(eps), "a/web;i/web 8080:80;"; got != want {
		t.Fatalf("n2's ports %q, want %q (ports on the ingress endpoint only)", got, want)
	}

	for _, tc := range []struct {
		what    string
		s       *api.Service
		changed string
	}{
		{"the same ports again", publishing(netService("web", 0, []string{"front"}, "a=10.0.255.193", "i=198.19.15.193"), "8080:80", "9090:90/host"), ""},
		{"an ingress port moves", publishing(netService("web", 0, []string{"front"}, "a=10.0.255.193"), "8081:80", "9090:90/host"), "[a i]"},
		{"a host port alone changes", publishing(netService("hosted", 0, nil), "7071:70/host"), ""},
		{"the last ingress port goes host", publishing(netService("web", 0, []string{"front"}, "a=10.0.255.193"), "8081:80/host"), "[a i]"},
	} {
		got := applyEndpointEvent(tab, store.Event{Kind: store.EventUpdate, Object: tc.s})
		if (tc.changed == "" && len(got) != 0) || (tc.changed != "" && !sameSet(got, tc.changed)) {
			t.Errorf("%s: changed %v, want %s", tc.what, got, tc.changed)
		}
	}
	if got, want := endpointsSeen(tab.view(tab.versions(nodes[0]))), "i |"; got != want {
		t.Fatalf("after web stopped publishing, n1 sees %q, want %q", got, want)
	}
}

// TestSessionOfIngressOnlyNode: a node whose one block is the ingress
// network's is sent the network and the mesh's endpoints, with ports,
// and again when a replica elsewhere starts serving.
func TestSessionOfIngressOnlyNode(t *testing.T) {
	h := newHarness(t, readyNode("n1", "i=198.19.0.0/26"), readyNode("n2", "i=198.19.0.64/26"))
	h.create(ingressOverlay(), publishing(netService("web", 0, nil), "8080:80"),
		task("t1", "n2", running, assignedS))
	h.change("t1", func(tk *api.Task) { tk.ServiceId = "web" })
	h.run()

	_, s1, first := h.openSession("n1", nil)
	if got, want := endpointsSeen(first.Networks, first.Endpoints), "i | i/web  [];"; got != want {
		t.Fatalf("n1's first message shows %q, want %q", got, want)
	}
	if got, want := portsSeen(first.Endpoints), "i/web 8080:80;"; got != want {
		t.Fatalf("n1's first message ports %q, want %q", got, want)
	}
	c2, _, sess2 := h.openSession("n2", nil)
	st := &api.TaskStatus{State: running, Addresses: []*api.NetworkAddress{{NetworkId: "i", Address: "198.19.0.66"}}}
	if _, err := c2.UpdateTaskStatus(h.ctxFor("n2"), &api.UpdateTaskStatusRequest{SessionId: sess2.SessionId,
		Updates: []*api.TaskStatusUpdate{{TaskId: "t1", Status: st}}}); err != nil {
		t.Fatal(err)
	}
	waitEndpoints(t, s1, "i | i/web  [t1@n2=198.19.0.66];")
}
