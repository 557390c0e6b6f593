package netview

import (
	"net/netip"
	"slices"
	"testing"

	"github.com/jaco-project/jaco/api"
)

func testView() View {
	node := &api.Node{Id: "node-a", OverlayBlocks: []*api.OverlayBlock{
		{NetworkId: "n1", Prefix: "10.1.0.64/26", Subnet: "10.1.0.0/16"},
		{NetworkId: "n2", Prefix: "10.2.0.0/26", Subnet: "10.2.0.0/16"},
		{NetworkId: "gone", Prefix: "10.9.0.0/26", Subnet: "10.9.0.0/16"},
	}}
	nets := []*api.Network{
		{Id: "n2", Spec: &api.NetworkSpec{Name: "back", Subnet: "10.2.0.0/16"}},
		{Id: "n1", Spec: &api.NetworkSpec{Name: "front", Subnet: "10.1.0.0/16"}},
	}
	eps := []*api.ServiceEndpoint{
		{ServiceId: "s1", ServiceName: "web", NetworkId: "n1", VirtualIp: "10.1.255.193", Replicas: []*api.EndpointReplica{
			{TaskId: "t1", NodeId: "node-a", Address: "10.1.0.66"},
			{TaskId: "t2", NodeId: "node-b", Address: "10.1.0.130"},
		}},
		{ServiceId: "s1", ServiceName: "web", NetworkId: "n2", VirtualIp: "10.2.255.193", Replicas: []*api.EndpointReplica{
			{TaskId: "t1", NodeId: "node-a", Address: "10.2.0.2"},
		}},
		{ServiceId: "s2", ServiceName: "db", NetworkId: "n2", Replicas: []*api.EndpointReplica{
			{TaskId: "t3", NodeId: "node-b", Address: "10.2.0.70"},
		}},
	}
	return View{Node: node, Networks: nets, Endpoints: eps}
}

func TestAttachmentsOnlyForKnownNetworks(t *testing.T) {
	atts := Attachments(testView(), 0)
	if len(atts) != 2 {
		t.Fatalf("attachments %v: want front and back only (a block of an unknown network gives none)", atts)
	}
	f := atts["front"]
	if f.Gateway != netip.MustParseAddr("10.1.0.65") || f.Block.String() != "10.1.0.64/26" || f.Subnet.String() != "10.1.0.0/16" {
		t.Errorf("front: %+v", f)
	}
	if f.MTU != DefaultMTU || f.NetworkID != "n1" {
		t.Errorf("front: %+v", f)
	}
	if f.Bridge == atts["back"].Bridge || len(f.Bridge) > 15 {
		t.Errorf("bridges %q and %q: want distinct names within IFNAMSIZ", f.Bridge, atts["back"].Bridge)
	}
	if BridgeName("node-b", "n1") == f.Bridge {
		t.Error("two nodes on one machine got one bridge name")
	}
	want := []netip.Addr{netip.MustParseAddr("10.1.0.65"), netip.MustParseAddr("10.2.0.1")}
	if got := Gateways(testView()); !slices.Equal(got, want) {
		t.Errorf("gateways %v, want %v", got, want)
	}
}

func TestRecordsCarryVIPsTasksAndAskers(t *testing.T) {
	r := Records(testView())
	if len(r.Networks) != 2 || r.Networks[0].Name != "back" || r.Networks[1].Name != "front" {
		t.Fatalf("networks %+v", r.Networks)
	}
	back := r.Networks[0]
	if len(back.Services) != 2 || back.Services[0].Name != "db" || back.Services[0].VIP.IsValid() {
		t.Fatalf("back services %+v: want db without VIP (dnsrr) first", back.Services)
	}
	web := r.Networks[1].Services[0]
	if web.VIP != netip.MustParseAddr("10.1.255.193") || len(web.Tasks) != 2 {
		t.Errorf("web on front: %+v", web)
	}
	// t1 runs here on both networks: it sees both whichever it asks through.
	for _, a := range []string{"10.1.0.66", "10.2.0.2"} {
		if got := r.Askers[netip.MustParseAddr(a)]; !slices.Equal(got, []string{"back", "front"}) {
			t.Errorf("asker %s sees %v, want [back front]", a, got)
		}
	}
	if _, ok := r.Askers[netip.MustParseAddr("10.1.0.130")]; ok {
		t.Error("another node's replica is listed as an asker here")
	}
}

func TestRulesSpreadVIPsOverReplicas(t *testing.T) {
	s := Rules(testView(), AllReplicas)
	if len(s.Networks) != 2 || s.Networks[0].String() != "10.2.0.0/16" || s.Networks[1].String() != "10.1.0.0/16" {
		t.Errorf("networks %v: want back's and front's subnets", s.Networks)
	}
	if len(s.VIPs) != 2 {
		t.Fatalf("VIPs %+v: want web's two (db is dnsrr)", s.VIPs)
	}
	for _, v := range s.VIPs {
		switch v.Addr.String() {
		case "10.1.255.193":
			if len(v.Backends) != 2 {
				t.Errorf("web on front: backends %v", v.Backends)
			}
		case "10.2.255.193":
			if len(v.Backends) != 1 || v.Backends[0].String() != "10.2.0.2" {
				t.Errorf("web on back: backends %v", v.Backends)
			}
		default:
			t.Errorf("unexpected VIP %v", v)
		}
	}
	if len(s.Gateways) != 2 {
		t.Errorf("gateways %v", s.Gateways)
	}
	if TableName("node-a") == TableName("node-b") || len(TableName("node-a")) > 64 {
		t.Error("table names must differ per node")
	}
}

// A stack service answers to its short name too, unless that name is
// another service's or two services claim it.
func TestRecordsAnswerStackAliases(t *testing.T) {
	v := testView()
	v.Endpoints = append(v.Endpoints,
		&api.ServiceEndpoint{ServiceName: "shop_api", NetworkId: "n1", VirtualIp: "10.1.255.194", Aliases: []string{"api"}},
		&api.ServiceEndpoint{ServiceName: "shop_web", NetworkId: "n1", VirtualIp: "10.1.255.195", Aliases: []string{"web"}},
		&api.ServiceEndpoint{ServiceName: "a_cache", NetworkId: "n1", VirtualIp: "10.1.255.196", Aliases: []string{"cache"}},
		&api.ServiceEndpoint{ServiceName: "b_cache", NetworkId: "n1", VirtualIp: "10.1.255.197", Aliases: []string{"cache"}},
	)
	front := Records(v).Networks[1]
	got := map[string]string{}
	for _, s := range front.Services {
		got[s.Name] = s.VIP.String()
	}
	if got["api"] != "10.1.255.194" || got["shop_api"] != "10.1.255.194" {
		t.Errorf("shop_api and its alias api: %v", got)
	}
	if got["web"] != "10.1.255.193" {
		t.Errorf("web is a service's own name; the alias must not take it: %v", got)
	}
	if _, ok := got["cache"]; ok {
		t.Errorf("cache claimed by two services answers: %v", got)
	}
}
