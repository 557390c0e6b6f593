package netview

import (
	"net/netip"
	"slices"
	"strconv"
	"testing"

	"github.com/jaco-project/jaco/agent/netrules"
	"github.com/jaco-project/jaco/api"
)

// ingressView is testView with the mesh: node-a holds a block of the
// ingress network; web publishes tcp 80 → 8080 and udp 53 → 5353 with
// a replica here and one on node-b; api (s0, sorting first) claims udp 53
// too and publishes tcp 81 with no replica running.
func ingressView() View {
	v := testView()
	v.Node.OverlayBlocks = append(v.Node.OverlayBlocks,
		&api.OverlayBlock{NetworkId: "ni", Prefix: "10.0.0.0/26", Subnet: "10.0.0.0/16"})
	v.Networks = append(v.Networks, &api.Network{Id: "ni",
		Spec: &api.NetworkSpec{Name: api.IngressNetwork, Subnet: "10.0.0.0/16", Ingress: true}})
	v.Endpoints = append(v.Endpoints,
		&api.ServiceEndpoint{ServiceId: "s1", ServiceName: "web", NetworkId: "ni", VirtualIp: "10.0.255.193",
			Replicas: []*api.EndpointReplica{
				{TaskId: "t1", NodeId: "node-a", Address: "10.0.0.2"},
				{TaskId: "t2", NodeId: "node-b", Address: "10.0.0.66"},
				{TaskId: "t9", NodeId: "node-b", Address: "10.9.0.5"}, // not on ingress: left out
			},
			Ports: []*api.PortConfig{
				{TargetPort: 8080, PublishedPort: 80},
				{Protocol: "udp", TargetPort: 5353, PublishedPort: 53, PublishMode: api.PublishMode_PUBLISH_MODE_INGRESS},
				{TargetPort: 22, PublishedPort: 2222, PublishMode: api.PublishMode_PUBLISH_MODE_HOST}, // not the mesh's
				{Protocol: "sctp", TargetPort: 9, PublishedPort: 9},                                   // not tcp or udp
				{TargetPort: 1, PublishedPort: 70000},                                                 // out of range
			}},
		&api.ServiceEndpoint{ServiceId: "s0", ServiceName: "api", NetworkId: "ni", Ports: []*api.PortConfig{
			{Protocol: "udp", TargetPort: 53, PublishedPort: 53},
			{TargetPort: 8081, PublishedPort: 81},
		}},
	)
	return v
}

func TestRulesPublishIngressPorts(t *testing.T) {
	s := Rules(ingressView(), AllReplicas)
	in := s.Ingress
	if in == nil {
		t.Fatal("no ingress state")
	}
	if in.Subnet.String() != "10.0.0.0/16" || in.Gateway != netip.MustParseAddr("10.0.0.1") {
		t.Errorf("ingress subnet %s gateway %s, want 10.0.0.0/16 and the node's 10.0.0.1", in.Subnet, in.Gateway)
	}
	if !slices.Contains(s.Networks, in.Subnet) {
		t.Errorf("networks %v lack the ingress subnet: the separation must cover it", s.Networks)
	}
	want := map[string]netrules.Published{
		"udp/53": {Proto: "udp", Port: 53, Target: 53}, // api's: s0 sorts before s1
		"tcp/81": {Proto: "tcp", Port: 81, Target: 8081},
		"tcp/80": {Proto: "tcp", Port: 80, Target: 8080, Backends: mustAddrs("10.0.0.2", "10.0.0.66")},
	}
	if len(in.Ports) != len(want) {
		t.Errorf("ports %+v, want %d", in.Ports, len(want))
	}
	for _, p := range in.Ports {
		w, ok := want[p.Proto+"/"+strconv.Itoa(int(p.Port))]
		if !ok || w.Target != p.Target || !slices.Equal(w.Backends, p.Backends) {
			t.Errorf("port %+v, want %+v", p, w)
		}
	}
	// The ingress VIP is a VIP like another.
	if !slices.ContainsFunc(s.VIPs, func(v netrules.VIP) bool { return v.Addr.String() == "10.0.255.193" }) {
		t.Errorf("VIPs %+v lack web's on ingress", s.VIPs)
	}

	// Without a block of it yet the node publishes nothing it can answer.
	v := ingressView()
	v.Node.OverlayBlocks = v.Node.OverlayBlocks[:3]
	if in := Rules(v, AllReplicas).Ingress; in == nil || in.Gateway.IsValid() || len(in.Ports) != 3 {
		t.Errorf("without a block: %+v, want the ports and no gateway (all refuse)", in)
	}
	// Without an ingress network: no mesh.
	if in := Rules(testView(), AllReplicas).Ingress; in != nil {
		t.Errorf("no ingress network, ingress %+v", in)
	}
}

func TestRulesPreferLocalReplicasWhenCutOff(t *testing.T) {
	s := Rules(ingressView(), PreferLocal)
	for _, v := range s.VIPs {
		switch v.Addr.String() {
		case "10.1.255.193": // web on front: t1 here, t2 on node-b
			if !slices.Equal(v.Backends, mustAddrs("10.1.0.66")) {
				t.Errorf("web on front cut off: %v, want only the local 10.1.0.66", v.Backends)
			}
		case "10.2.255.193":
			if !slices.Equal(v.Backends, mustAddrs("10.2.0.2")) {
				t.Errorf("web on back: %v", v.Backends)
			}
		}
	}
	for _, p := range s.Ingress.Ports {
		if p.Port == 80 && !slices.Equal(p.Backends, mustAddrs("10.0.0.2")) {
			t.Errorf("tcp 80 cut off: %v, want only the local 10.0.0.2", p.Backends)
		}
	}
	// A service with no replica here keeps the others: better a stale
	// backend than none.
	v := testView()
	v.Endpoints[0].Replicas = v.Endpoints[0].Replicas[1:] // web on front: only node-b's
	for _, vip := range Rules(v, PreferLocal).VIPs {
		if vip.Addr.String() == "10.1.255.193" && !slices.Equal(vip.Backends, mustAddrs("10.1.0.130")) {
			t.Errorf("web on front, none local: %v, want node-b's", vip.Backends)
		}
	}
}

func TestRecordsSkipIngress(t *testing.T) {
	r := Records(ingressView())
	for _, n := range r.Networks {
		if n.Name == api.IngressNetwork {
			t.Errorf("records serve the ingress network: %+v", n)
		}
	}
	if got := r.Askers[netip.MustParseAddr("10.1.0.66")]; !slices.Equal(got, []string{"back", "front"}) {
		t.Errorf("t1 sees %v, want [back front] (not ingress)", got)
	}
	// Replicas attach to it like to any network.
	if a, ok := Attachments(ingressView(), 0)[api.IngressNetwork]; !ok || a.Gateway.String() != "10.0.0.1" {
		t.Errorf("ingress attachment %+v, %v", a, ok)
	}
}

func mustAddrs(ss ...string) []netip.Addr {
	var out []netip.Addr
	for _, s := range ss {
		out = append(out, netip.MustParseAddr(s))
	}
	return out
}
