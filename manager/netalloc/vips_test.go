package netalloc

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/manager/state/store"
	"github.com/jaco-project/jaco/manager/state/store/storetest"
)

// service is a service on networks (by name) holding vips ("network id=address").
func service(id string, mode api.EndpointMode, networks []string, vips ...string) *api.Service {
	s := &api.Service{Id: id, Meta: &api.Meta{}, Spec: &api.ServiceSpec{Name: id, Networks: networks, EndpointMode: mode}}
	for _, v := range vips {
		nw, a, _ := strings.Cut(v, "=")
		s.VirtualIps = append(s.VirtualIps, &api.VirtualIP{NetworkId: nw, Address: a})
	}
	return s
}

func vipsOf(s *api.Service) string {
	var parts []string
	for _, v := range s.GetVirtualIps() {
		parts = append(parts, v.NetworkId+"="+v.Address)
	}
	return strings.Join(parts, " ")
}

const (
	vip     = api.EndpointMode_ENDPOINT_MODE_VIP
	unspec  = api.EndpointMode_ENDPOINT_MODE_UNSPECIFIED
	dnsrr   = api.EndpointMode_ENDPOINT_MODE_DNSRR
	tiny    = "198.18.5.0/24" // VIP block 198.18.5.192/26
	tinyVIP = "198.18.5.193"
)

func TestPlanVIPs(t *testing.T) {
	nets := []*api.Network{network("a", "front", "10.0.0.0/16"), network("b", "back", tiny)}
	for _, tc := range []struct {
		name     string
		services []*api.Service
		want     map[string]string // service → VIPs after; services absent are unchanged
		short    int
	}{
		{"one VIP per network of the spec, in its order, from the top block; the default mode is VIP",
			[]*api.Service{service("s1", unspec, []string{"back", "front"}), service("s2", vip, []string{"front"}), service("s3", vip, nil)},
			map[string]string{"s1": "b=198.18.5.193 a=10.0.255.193", "s2": "a=10.0.255.194"}, 0},
		{"held VIPs stay; a new service takes a free one, never a held one",
			[]*api.Service{service("s1", vip, []string{"back"}, "b=198.18.5.200"), service("s0", vip, []string{"back"})},
			map[string]string{"s0": "b=198.18.5.193"}, 0},
		{"a network leaving the spec, or removed, gives its VIP back",
			[]*api.Service{service("s1", vip, []string{"front"}, "a=10.0.255.193", "b=198.18.5.193", "gone=10.9.255.193")},
			map[string]string{"s1": "a=10.0.255.193"}, 0},
		{"DNSRR holds no VIP",
			[]*api.Service{service("s1", dnsrr, []string{"front"}, "a=10.0.255.193"), service("s2", dnsrr, []string{"back"})},
			map[string]string{"s1": ""}, 0},
		{"an address outside the VIP block, its broadcast, or claimed twice is replaced",
			[]*api.Service{service("s1", vip, []string{"back"}, "b=198.18.5.10"), service("s2", vip, []string{"back"}, "b=198.18.5.255"),
				service("s3", vip, []string{"back"}, "b=198.18.5.194"), service("s4", vip, []string{"back"}, "b=198.18.5.194")},
			map[string]string{"s1": "b=198.18.5.193", "s2": "b=198.18.5.195", "s4": "b=198.18.5.196"}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			changed, short := planVIPs(nets, tc.services)
			got := map[string]string{}
			for _, s := range changed {
				got[s.Id] = vipsOf(s)
			}
			if fmt.Sprint(got) != fmt.Sprint(tc.want) || len(short) != tc.short {
				t.Fatalf("changed %v, %d short (%v); want %v, %d short", got, len(short), short, tc.want, tc.short)
			}
		})
	}
}

// TestPlanVIPsFull: a network's VIP block holds 62 services; the 63rd
// waits, and takes the address the first one frees.
func TestPlanVIPsFull(t *testing.T) {
	nets := []*api.Network{network("b", "back", tiny)}
	var services []*api.Service
	for i := range 63 {
		services = append(services, service(fmt.Sprintf("s%02d", i), vip, []string{"back"}))
	}
	changed, short := planVIPs(nets, services)
	if len(changed) != 62 || len(short) != 1 || short[0].serviceID != "s62" {
		t.Fatalf("%d services given a VIP, short %v; want 62 and s62 short", len(changed), short)
	}
	if got := vipsOf(changed[61]); got != "b=198.18.5.254" {
		t.Fatalf("last VIP %q, want b=198.18.5.254", got)
	}
	// s00 goes: s62 takes its address.
	services = append(changed[1:], services[62])
	changed, short = planVIPs(nets, services)
	if len(changed) != 1 || vipsOf(changed[0]) != "b="+tinyVIP || len(short) != 0 {
		t.Fatalf("after s00 went: changed %v, short %v; want s62 at %s", changed, short, tinyVIP)
	}
}

// TestRunGivesServicesVIPs: a service on a network gets a VIP that stays
// across an update of something else, goes when it turns to DNSRR, and
// comes back (the lowest free) when it turns back.
func TestRunGivesServicesVIPs(t *testing.T) {
	st := storetest.New(t)
	storetest.Create(t, st, network("b", "back", tiny), service("s1", vip, []string{"back"}, "b=198.18.5.250"))
	ctx := runAllocator(t, st)

	wait := func(id, want string) {
		t.Helper()
		waitUntil(t, st, id+"'s VIPs", want, func(tx store.ReadTx) string { return vipsOf(tx.GetService(id)) })
	}
	change := func(id string, fn func(*api.ServiceSpec)) {
		t.Helper()
		if err := st.Update(ctx, func(tx *store.Tx) error {
			s := tx.GetService(id)
			fn(s.Spec)
			return tx.Update(s)
		}); err != nil {
			t.Fatal(err)
		}
	}
	storetest.Create(t, st, service("s2", unspec, []string{"back"}))
	wait("s2", "b="+tinyVIP)
	wait("s1", "b=198.18.5.250")

	change("s1", func(sp *api.ServiceSpec) { sp.EndpointMode = dnsrr })
	wait("s1", "")
	change("s1", func(sp *api.ServiceSpec) { sp.EndpointMode = vip })
	wait("s1", "b=198.18.5.194")

	if err := st.Update(ctx, func(tx *store.Tx) error { return tx.Delete(tx.GetService("s2")) }); err != nil {
		t.Fatal(err)
	}
	storetest.Create(t, st, service("s3", vip, []string{"back"}))
	wait("s3", "b="+tinyVIP)
}

// TestVIPPassWritesInChunks: services too heavy for one transaction all
// get their VIPs, distinct, over several.
func TestVIPPassWritesInChunks(t *testing.T) {
	st := storetest.New(t)
	storetest.Create(t, st, network("b", "back", tiny))
	for i := range 12 {
		s := service(fmt.Sprintf("s%02d", i), vip, []string{"back"})
		s.Spec.Env = []string{"PAD=" + strings.Repeat("x", 100<<10)}
		storetest.Create(t, st, s)
	}
	if err := New(st).pass(context.Background()); err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	st.View(func(tx store.ReadTx) {
		for _, s := range tx.ListServices() {
			v := vipsOf(s)
			if v == "" || seen[v] {
				t.Errorf("%s has VIPs %q (seen before: %v)", s.Id, v, seen[v])
			}
			seen[v] = true
		}
	})
}
