package formation

import (
	"slices"
	"strings"
	"testing"

	"github.com/jaco-project/jaco/ca"
)

func TestParseOrdinal(t *testing.T) {
	for name, want := range map[string]int{"jaco-0": 0, "jaco-1": 1, "my-set-12": 12, "a-7": 7} {
		got, err := ParseOrdinal(name)
		if err != nil || got != want {
			t.Errorf("ParseOrdinal(%q) = %d, %v; want %d", name, got, err, want)
		}
	}
	for _, name := range []string{"jaco", "jaco-", "-1", "jaco-01", "jaco-x", "jaco--1", "jaco-1a", "jaco-1234567890"} {
		if _, err := ParseOrdinal(name); err == nil || !strings.Contains(err.Error(), "ordinal") {
			t.Errorf("ParseOrdinal(%q): %v, want an error naming the ordinal", name, err)
		}
	}
}

func TestParseInitialCluster(t *testing.T) {
	got, err := ParseInitialCluster(" c=10.0.0.3:7000, a=10.0.0.1:7000,b=[fd00::2]:7000")
	if err != nil {
		t.Fatal(err)
	}
	if s := canonicalInitialCluster(got); s != "a=10.0.0.1:7000,b=[fd00::2]:7000,c=10.0.0.3:7000" {
		t.Fatalf("canonical form %q", s)
	}
	for in, want := range map[string]string{
		"":                                     "not name=host:port",
		"a=10.0.0.1:7000,":                     "not name=host:port",
		"a":                                    "not name=host:port",
		"a=10.0.0.1":                           "missing port",
		"a=:7000":                              "no host",
		"a=10.0.0.1:0":                         "port",
		"a=10.0.0.1:x":                         "port",
		"a_b=10.0.0.1:7000":                    "DNS-style",
		"=10.0.0.1:7000":                       "DNS-style",
		"a=10.0.0.1:7000,a=10.0.0.2:7000":      "given twice",
		"a=10.0.0.1:7000,b=10.0.0.1:7000":      "is given to a and b",
		"a=10.0.0.1:7000,b=10.0.0.2:7000,c=d=": "c=d=",
	} {
		_, err := ParseInitialCluster(in)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseInitialCluster(%q): %v, want an error containing %q", in, err, want)
		}
	}
}

func TestDeriveStaticAlikeOnEveryNode(t *testing.T) {
	members, err := ParseInitialCluster("a=10.0.0.1:7000,b=10.0.0.2:7000,c=10.0.0.3:7000")
	if err != nil {
		t.Fatal(err)
	}
	reordered, _ := ParseInitialCluster("c=10.0.0.3:7000,a=10.0.0.1:7000,b=10.0.0.2:7000")
	s1, _ := ca.NewJoinSecret([]byte("0123456789abcdef0123456789abcdef"))
	s2, _ := ca.NewJoinSecret([]byte("0123456789abcdef0123456789abcdef\n"))
	c1, m1, err := deriveStatic(s1, members)
	if err != nil {
		t.Fatal(err)
	}
	c2, m2, err := deriveStatic(s2, reordered)
	if err != nil {
		t.Fatal(err)
	}
	if c1.ClusterID != c2.ClusterID || string(c1.CACertPEM) != string(c2.CACertPEM) {
		t.Fatal("two nodes derived different clusters")
	}
	for i := range m1 {
		if m1[i] != m2[i] {
			t.Fatalf("member %d: %+v vs %+v", i, m1[i], m2[i])
		}
		if m1[i].raftID == 0 {
			t.Fatalf("member %s has raft id 0", m1[i].name)
		}
	}
	if m1[0].raftID == m1[1].raftID || m1[0].nodeID == m1[1].nodeID {
		t.Fatal("two members share an id")
	}
	if _, _, err := ca.NewNodeKey(m1[0].nodeID); err != nil {
		t.Fatalf("derived node id is not a valid node id: %v", err)
	}
}

func TestResolveJoinAddrs(t *testing.T) {
	const self = "127.0.0.1:7000"
	joinAddrs := []string{"127.0.0.1:7000", "127.0.0.2:7000", "localhost:7001", "127.0.0.2:7000"}
	got, err := resolveJoinAddrs(t.Context(), joinAddrs, self)
	if err != nil {
		t.Fatal(err)
	}
	// Its own address left out, duplicates once, a name resolved to
	// (at least) its loopback address.
	if slices.Contains(got, "127.0.0.1:7000") || !slices.Contains(got, "127.0.0.2:7000") || !slices.Contains(got, "127.0.0.1:7001") {
		t.Fatalf("resolved %q", got)
	}
	if len(got) != len(slices.Compact(slices.Sorted(slices.Values(got)))) {
		t.Fatalf("duplicates in %q", got)
	}
	joinAddrs = []string{"no-such-host.invalid:7000"}
	if got, err := resolveJoinAddrs(t.Context(), joinAddrs, self); err == nil || len(got) != 0 {
		t.Fatalf("unresolvable name: %q, %v; want an error", got, err)
	}
}
