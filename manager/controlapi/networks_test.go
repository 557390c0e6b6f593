package controlapi

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/api/limits"
	"github.com/jaco-project/jaco/api/reason"
	"github.com/jaco-project/jaco/manager/state/store"
	"github.com/jaco-project/jaco/manager/state/store/storetest"
)

func newNetworkServer(t *testing.T, pool string) (*Server, *store.Store) {
	t.Helper()
	st := storetest.New(t)
	storetest.Create(t, st, &api.Cluster{Id: "c1", Meta: &api.Meta{}, OverlayPool: pool})
	return New(st), st
}

func createNetwork(t *testing.T, s *Server, name, subnet string) *api.Network {
	t.Helper()
	resp, err := s.CreateNetwork(context.Background(), &api.CreateNetworkRequest{Spec: &api.NetworkSpec{Name: name, Subnet: subnet}})
	if err != nil {
		t.Fatalf("create network %s: %v", name, err)
	}
	return resp.Network
}

func wantRefused(t *testing.T, what string, err error, word string, says ...string) {
	t.Helper()
	if reason.Of(err) != word {
		t.Fatalf("%s: %v, want %s", what, err, word)
	}
	for _, w := range says {
		if !strings.Contains(reason.Sentence(err), w) {
			t.Fatalf("%s: %q does not say %q", what, reason.Sentence(err), w)
		}
	}
}

func networkCount(st *store.Store) (n int) {
	st.View(func(tx store.ReadTx) { n = len(tx.ListNetworks()) })
	return n
}

// TestNetworkSubnets: a network without a subnet gets the lowest free one
// of the cluster's pool; one asked for must not overlap another's.
func TestNetworkSubnets(t *testing.T) {
	s, st := newNetworkServer(t, "198.18.0.0/15")
	if got := createNetwork(t, s, "front", "").Spec.Subnet; got != "198.18.0.0/19" {
		t.Fatalf("first network of 198.18.0.0/15 got %s, want 198.18.0.0/19", got)
	}
	if got := createNetwork(t, s, "mine", "198.18.64.0/24").Spec.Subnet; got != "198.18.64.0/24" {
		t.Fatalf("asked for 198.18.64.0/24, got %s", got)
	}
	if got := createNetwork(t, s, "back", "").Spec.Subnet; got != "198.18.32.0/19" {
		t.Fatalf("second network got %s, want 198.18.32.0/19", got)
	}
	// The next /19 holds mine: it is skipped.
	if got := createNetwork(t, s, "third", "").Spec.Subnet; got != "198.18.96.0/19" {
		t.Fatalf("third network got %s, want 198.18.96.0/19 (198.18.64.0/19 holds mine)", got)
	}

	ctx := context.Background()
	before := networkCount(st)
	for _, tc := range []struct {
		name, subnet, word string
		says               []string
		labels             map[string]string
	}{
		{"front", "", reason.AlreadyExists, []string{"front exists"}, nil},
		{"dup", "198.18.0.0/16", reason.InvalidSpec, []string{"subnet 198.18.0.0/16 overlaps", "of network"}, nil},
		{"inner", "198.18.64.128/25", reason.InvalidSpec, []string{"/8 to /24"}, nil},
		{"hostbits", "198.18.64.1/24", reason.InvalidSpec, []string{"host bits", "198.18.64.0/24"}, nil},
		{"v6", "fd00::/64", reason.InvalidSpec, []string{"not an IPv4 CIDR"}, nil},
		{"Bad Name", "", reason.InvalidSpec, []string{"network name"}, nil},
		{"badlabel", "", reason.InvalidSpec, []string{`label key "a b"`}, map[string]string{"a b": "x"}},
		{"ctrllabel", "", reason.InvalidSpec, []string{"control characters"}, map[string]string{"k": "x\ny"}},
	} {
		spec := &api.NetworkSpec{Name: tc.name, Subnet: tc.subnet, Labels: tc.labels}
		_, err := s.CreateNetwork(ctx, &api.CreateNetworkRequest{Spec: spec})
		wantRefused(t, fmt.Sprintf("network %s %s", tc.name, tc.subnet), err, tc.word, tc.says...)
	}
	if n := networkCount(st); n != before {
		t.Fatalf("refused creates left %d networks, want %d", n, before)
	}
}

// TestNetworkLabels: labels given at create are stored and listed (a
// stack finds its networks by them).
func TestNetworkLabels(t *testing.T) {
	s, _ := newNetworkServer(t, "198.19.0.0/16")
	ctx := context.Background()
	labels := map[string]string{api.StackLabel: "shop"}
	if _, err := s.CreateNetwork(ctx, &api.CreateNetworkRequest{Spec: &api.NetworkSpec{Name: "shop_back", Labels: labels}}); err != nil {
		t.Fatal(err)
	}
	createNetwork(t, s, "plain", "")
	resp, err := s.ListNetworks(ctx, &api.ListNetworksRequest{})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, n := range resp.Networks {
		got[n.Spec.Name] = n.Spec.Labels[api.StackLabel]
	}
	if got["shop_back"] != "shop" || got["plain"] != "" || len(got) != 2 {
		t.Fatalf("stack label by network: %v, want shop_back=shop and plain unlabelled", got)
	}
}

func TestNetworkPoolExhausted(t *testing.T) {
	s, _ := newNetworkServer(t, "198.19.0.0/16")
	for i := range 16 {
		createNetwork(t, s, fmt.Sprintf("n%d", i), "")
	}
	_, err := s.CreateNetwork(context.Background(), &api.CreateNetworkRequest{Spec: &api.NetworkSpec{Name: "n16"}})
	wantRefused(t, "a 17th /20 of a /16", err, reason.LimitExceeded, "no free /20", "--subnet")
	createNetwork(t, s, "n16", "198.18.0.0/24")
}

// TestServicesOnNetworks: a service names existing networks only; a
// network a service uses, now or in the spec it would roll back to, is
// not removed.
func TestServicesOnNetworks(t *testing.T) {
	s, st := newNetworkServer(t, "")
	ctx := context.Background()
	front := createNetwork(t, s, "front", "")
	if front.Spec.Subnet != "10.0.0.0/16" {
		t.Fatalf("the default pool's first network got %s, want 10.0.0.0/16", front.Spec.Subnet)
	}
	createNetwork(t, s, "back", "")

	spec := imageSpec("web")
	spec.Networks = []string{"front", "nope"}
	_, err := s.CreateService(ctx, &api.CreateServiceRequest{Spec: spec})
	wantRefused(t, "a service on an unknown network", err, reason.NotFound, `no network named "nope"`)
	if _, ok := storedReplicas(st, "web"); ok {
		t.Fatal("refused create stored the service")
	}
	spec.Networks = []string{"front", "front"}
	_, err = s.CreateService(ctx, &api.CreateServiceRequest{Spec: spec})
	wantRefused(t, "a network twice", err, reason.InvalidSpec, "front twice")
	spec.Networks = make([]string, limits.MaxServiceNetworks+1)
	for i := range spec.Networks {
		spec.Networks[i] = fmt.Sprintf("n%d", i)
	}
	_, err = s.CreateService(ctx, &api.CreateServiceRequest{Spec: spec})
	wantRefused(t, "too many networks", err, reason.LimitExceeded, "networks has 9 entries")

	spec.Networks = []string{"front"}
	create(t, s, spec)
	_, err = s.RemoveNetwork(ctx, &api.RemoveNetworkRequest{Network: "front"})
	wantRefused(t, "removing a network in use", err, reason.NetworkInUse, "used by services web")

	got, err := s.GetNetwork(ctx, &api.GetNetworkRequest{Network: front.Id})
	if err != nil || got.Network.Spec.Name != "front" || strings.Join(got.Services, ",") != "web" {
		t.Fatalf("inspect front by id: %v, %v; want it with service web", got, err)
	}

	// Moved off front, web may still roll back onto it: front stays.
	moved := imageSpec("web")
	moved.Networks = []string{"back"}
	if _, err := s.UpdateService(ctx, &api.UpdateServiceRequest{Service: "web", Spec: moved}); err != nil {
		t.Fatal(err)
	}
	_, err = s.RemoveNetwork(ctx, &api.RemoveNetworkRequest{Network: "front"})
	wantRefused(t, "removing the network a rollback returns to", err, reason.NetworkInUse, "web")

	if _, err := s.RemoveService(ctx, &api.RemoveServiceRequest{Service: "web"}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.RemoveNetwork(ctx, &api.RemoveNetworkRequest{Network: "front"}); err != nil {
		t.Fatalf("removing an unused network: %v", err)
	}
	_, err = s.RemoveNetwork(ctx, &api.RemoveNetworkRequest{Network: "front"})
	wantRefused(t, "removing it twice", err, reason.NotFound)
	list, err := s.ListNetworks(ctx, &api.ListNetworksRequest{})
	if err != nil || len(list.Networks) != 1 || list.Networks[0].Spec.Name != "back" {
		t.Fatalf("networks after removing front: %v, %v; want back alone", list, err)
	}
}
