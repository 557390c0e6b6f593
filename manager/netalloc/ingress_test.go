package netalloc

import (
	"fmt"
	"slices"
	"testing"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/manager/state/store"
	"github.com/jaco-project/jaco/manager/state/store/storetest"
)

func ingressNet() *api.Network {
	nw := network("i", api.IngressNetwork, "198.19.0.0/20")
	nw.Spec.Ingress = true
	return nw
}

// meshed gives n a working overlay end, as an agent publishes it.
func meshed(n *api.Node) *api.Node {
	n.Address = "198.18.0.1:4242"
	n.Description = &api.NodeDescription{Overlay: &api.OverlayEndpoint{PublicKey: make([]byte, 32), Port: 51820}}
	return n
}

func publisher(id string, mode api.PublishMode) *api.Service {
	return &api.Service{Id: id, Meta: &api.Meta{}, Spec: &api.ServiceSpec{Name: id,
		Ports: []*api.PortConfig{{PublishedPort: 8080, TargetPort: 80, PublishMode: mode}}}}
}

func ingressTask(id, nodeID string) *api.Task {
	t := task(id, nodeID)
	t.Spec.Ports = []*api.PortConfig{{PublishedPort: 8080, TargetPort: 80}}
	return t
}

// TestPlanIngress: while a service publishes an ingress port, every node
// that can carry overlay traffic holds an ingress block, replicas or not;
// the blocks go back when none publishes, except where a task still
// attaches to the mesh.
func TestPlanIngress(t *testing.T) {
	nets := []*api.Network{network("a", "front", "10.0.0.0/16"), ingressNet()}
	isolated := meshed(node("n2"))
	isolated.Description.IsolationUnavailable = true
	broken := meshed(node("n3"))
	broken.Description.Overlay.Unavailable = true
	nodes := func() []*api.Node {
		return []*api.Node{meshed(node("n1")), isolated, broken, node("n4"), meshed(node("n5", "i=198.19.0.0/26"))}
	}
	for _, tc := range []struct {
		name     string
		services []*api.Service
		tasks    []*api.Task
		want     map[string]string
	}{
		{"an ingress publisher: every mesh node",
			[]*api.Service{publisher("web", api.PublishMode_PUBLISH_MODE_UNSPECIFIED)}, nil,
			map[string]string{"n1": "i=198.19.0.64/26"}},
		{"a host-mode port: none, and held blocks go back",
			[]*api.Service{publisher("web", api.PublishMode_PUBLISH_MODE_HOST)}, nil,
			map[string]string{"n5": ""}},
		{"a replica joins the mesh through its ports",
			nil, []*api.Task{ingressTask("t1", "n5"), ingressTask("t4", "n4")},
			map[string]string{"n4": "i=198.19.0.64/26"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			changed, short := plan(nets, nodes(), slices.Values(tc.tasks), tc.services)
			got := map[string]string{}
			for _, n := range changed {
				got[n.Id] = blocksOf(n)
			}
			if fmt.Sprint(got) != fmt.Sprint(tc.want) || len(short) != 0 {
				t.Fatalf("changed %v, short %v; want %v", got, short, tc.want)
			}
		})
	}
}

// TestNoVIPOnIngress: the mesh needs no virtual IP, whatever a spec says.
func TestNoVIPOnIngress(t *testing.T) {
	svc := publisher("web", api.PublishMode_PUBLISH_MODE_INGRESS)
	svc.Spec.Networks = []string{"front", api.IngressNetwork}
	changed, _ := planVIPs([]*api.Network{network("a", "front", "10.0.0.0/16"), ingressNet()}, []*api.Service{svc})
	if len(changed) != 1 || len(changed[0].VirtualIps) != 1 || changed[0].VirtualIps[0].NetworkId != "a" {
		t.Fatalf("VIPs %v; want one, on front only", changed)
	}
}

// TestRunIngressFollowsNodesAndServices: a node whose overlay comes up
// gets its ingress block without any task; the last publisher leaving
// takes every ingress block back.
func TestRunIngressFollowsNodesAndServices(t *testing.T) {
	st := storetest.New(t)
	storetest.Create(t, st, ingressNet(), meshed(node("n1")), node("n2"), publisher("web", api.PublishMode_PUBLISH_MODE_UNSPECIFIED))
	ctx := runAllocator(t, st)

	wait := func(id, want string) {
		t.Helper()
		waitUntil(t, st, id+"'s blocks", want, func(tx store.ReadTx) string { return blocksOf(tx.GetNode(id)) })
	}
	wait("n1", "i=198.19.0.0/26")
	if err := st.Update(ctx, func(tx *store.Tx) error {
		n := tx.GetNode("n2")
		meshed(n)
		return tx.Update(n)
	}); err != nil {
		t.Fatal(err)
	}
	wait("n2", "i=198.19.0.64/26")
	if err := st.Update(ctx, func(tx *store.Tx) error {
		s := tx.GetService("web")
		s.Spec.Ports[0].PublishMode = api.PublishMode_PUBLISH_MODE_HOST
		return tx.Update(s)
	}); err != nil {
		t.Fatal(err)
	}
	wait("n1", "")
	wait("n2", "")
}
