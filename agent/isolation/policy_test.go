package isolation

import (
	"maps"
	"net/netip"
	"testing"

	"github.com/jaco-project/jaco/api"
)

func member(id, addr, service string, spec *api.ServiceSpec) Member {
	return MemberOf(id, netip.MustParseAddr(addr), service, spec)
}

func TestPolicyPairs(t *testing.T) {
	web1 := member("w1", "198.18.0.130", "web", &api.ServiceSpec{DependsOn: []string{"db"}})
	web2 := member("w2", "198.18.0.131", "web", &api.ServiceSpec{DependsOn: []string{"db"}})
	db := member("d1", "198.18.0.132", "db", &api.ServiceSpec{})
	cache := member("c1", "198.18.0.133", "cache", &api.ServiceSpec{})
	openSvc := member("o1", "198.18.0.134", "dns", &api.ServiceSpec{Network: &api.NetworkAccess{Open: true}})
	metrics := member("m1", "198.18.0.135", "metrics", &api.ServiceSpec{Network: &api.NetworkAccess{AllowFrom: []string{"cache"}}})
	all := []Member{web1, web2, db, cache, openSvc, metrics}

	cases := []struct {
		name     string
		from, to Member
		want     bool
	}{
		{"same service", web1, web2, true},
		{"same service, other way", web2, web1, true},
		{"dependency", web1, db, true},
		{"not the dependent from the dependency", db, web1, false},
		{"unrelated services", web1, cache, false},
		{"unrelated services, other way", cache, db, false},
		{"open service from anyone", cache, openSvc, true},
		{"open service reaches no one by it", openSvc, cache, false},
		{"allow_from names the source", cache, metrics, true},
		{"allow_from names another service", web1, metrics, false},
	}
	policy := contentsOf(all)
	if len(policy.addrs) != len(all) {
		t.Fatalf("addresses = %v, want all %d members", policy.addrs, len(all))
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := policy.pairs[pair{c.from.Addr, c.to.Addr}]
			if got != c.want {
				t.Errorf("%s (%s) -> %s (%s) allowed = %v, want %v", c.from.Service, c.from.Addr, c.to.Service, c.to.Addr, got, c.want)
			}
		})
	}
}

func TestPolicyNoSelfPairsNoDuplicates(t *testing.T) {
	a := member("a", "198.18.0.130", "web", &api.ServiceSpec{DependsOn: []string{"web"}, Network: &api.NetworkAccess{Open: true}})
	// A replica re-attached under a second id with the same address (an
	// adoption racing a restart) must not double the pairs.
	b := member("b", "198.18.0.130", "web", &api.ServiceSpec{})
	c := member("c", "198.18.0.131", "web", &api.ServiceSpec{})
	got := contentsOf([]Member{a, b, c})
	if len(got.addrs) != 2 {
		t.Errorf("addresses = %v, want 2 distinct", got.addrs)
	}
	want := map[pair]bool{{a.Addr, c.Addr}: true, {c.Addr, a.Addr}: true}
	if !maps.Equal(got.pairs, want) {
		t.Errorf("pairs = %v, want %v", got.pairs, want)
	}
}

func TestPolicyEmpty(t *testing.T) {
	got := contentsOf(nil)
	if len(got.addrs) != 0 || len(got.pairs) != 0 {
		t.Errorf("contentsOf(nil) = %v; want nothing", got)
	}
}
