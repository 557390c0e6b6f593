package dns

import (
	"net/netip"
	"slices"
	"testing"
)

// Service and network names may hold dots (the manager allows them):
// every split of a name is tried, and ownership needs a known service
// followed by nothing or a known network.
func TestLookupDottedNames(t *testing.T) {
	tb, err := compile(Records{Networks: []Network{
		{Name: "corp.net", Subnet: netip.MustParsePrefix("198.18.0.0/24"), Services: []Service{
			{Name: "api.v2", VIP: addr("198.18.0.250"), Tasks: addrs("198.18.0.1")},
			{Name: "Tasks", VIP: addr("198.18.0.251")},
		}},
		{Name: "other", Subnet: netip.MustParsePrefix("198.18.1.0/24"), Services: []Service{
			{Name: "api", VIP: addr("198.18.1.250")},
		}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	asker := addr("198.18.0.7")
	for _, tc := range []struct {
		name  string
		want  []netip.Addr
		owned bool
	}{
		{"api.v2", addrs("198.18.0.250"), true},
		{"api.v2.corp.net", addrs("198.18.0.250"), true},
		{"tasks.api.v2.corp.net", addrs("198.18.0.1"), true},
		{"tasks", addrs("198.18.0.251"), true}, // a service named tasks
		{"api", nil, true},                     // on other only
		{"api.other", nil, true},
		{"api.v2.other", nil, true},
		{"api.v2.example", nil, false}, // not a network: the host's resolvers decide
		{"tasks.nothing", nil, false},
		{"example.org", nil, false},
	} {
		got, owned := tb.lookup(asker, tc.name)
		if owned != tc.owned || !slices.Equal(got, tc.want) {
			t.Errorf("%s: got %v owned %v, want %v owned %v", tc.name, got, owned, tc.want, tc.owned)
		}
	}
}

func TestCompileRefuses(t *testing.T) {
	p := netip.MustParsePrefix("198.18.0.0/24")
	for name, r := range map[string]Records{
		"duplicate network": {Networks: []Network{{Name: "a", Subnet: p}, {Name: "A", Subnet: p}}},
		"duplicate service": {Networks: []Network{{Name: "a", Subnet: p, Services: []Service{{Name: "s"}, {Name: "S"}}}}},
		"empty label":       {Networks: []Network{{Name: "a", Subnet: p, Services: []Service{{Name: "s..t"}}}}},
		"no subnet":         {Networks: []Network{{Name: "a"}}},
		"unknown asker net": {Networks: []Network{{Name: "a", Subnet: p}}, Askers: map[netip.Addr][]string{addr("198.18.0.1"): {"b"}}},
	} {
		if _, err := compile(r); err == nil {
			t.Errorf("%s: taken", name)
		}
	}
}
