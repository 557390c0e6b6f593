package controlapi

import (
	"context"
	"strings"
	"testing"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/api/limits"
	"github.com/jaco-project/jaco/api/reason"
	"github.com/jaco-project/jaco/manager/state/store"
	"github.com/jaco-project/jaco/manager/state/store/storetest"
)

func newLimitsServer(t *testing.T) (*Server, *store.Store) {
	t.Helper()
	st := storetest.New(t)
	storetest.Create(t, st, &api.Cluster{Id: "c1", Meta: &api.Meta{}})
	return New(st), st
}

func scaled(name string, replicas uint64) *api.ServiceSpec {
	spec := imageSpec(name)
	spec.Replicas = replicas
	return spec
}

// wantLimitExceeded checks a refusal names the field and the limit.
func wantLimitExceeded(t *testing.T, what string, err error, words ...string) {
	t.Helper()
	if reason.Of(err) != reason.LimitExceeded {
		t.Fatalf("%s: err = %v, want limit_exceeded", what, err)
	}
	for _, w := range words {
		if !strings.Contains(reason.Sentence(err), w) {
			t.Fatalf("%s: %q does not say %q", what, reason.Sentence(err), w)
		}
	}
}

func storedReplicas(st *store.Store, name string) (n uint64, ok bool) {
	st.View(func(tx store.ReadTx) {
		if svc := tx.FindServiceByName(name); svc != nil {
			n, ok = svc.Spec.Replicas, true
		}
	})
	return n, ok
}

// The defect: `jaco service create --replicas 1000000` was accepted and
// took the leader from 57 MiB to 8 GiB (docs/adr/0022).
func TestReplicasOverTheLimitAreRefusedAndChangeNothing(t *testing.T) {
	s, st := newLimitsServer(t)
	ctx := context.Background()
	for _, n := range []uint64{1_000_000, limits.DefaultMaxReplicasPerService + 1} {
		_, err := s.CreateService(ctx, &api.CreateServiceRequest{Spec: scaled("web", n)})
		wantLimitExceeded(t, "create", err, "replicas", "max_replicas_per_service 10000")
		if _, ok := storedReplicas(st, "web"); ok {
			t.Fatalf("create of %d replicas refused, yet the service was stored", n)
		}
	}
	create(t, s, scaled("web", limits.DefaultMaxReplicasPerService))
	_, err := s.UpdateService(ctx, &api.UpdateServiceRequest{Service: "web", Spec: scaled("web", 1_000_000)})
	wantLimitExceeded(t, "update", err, "replicas 1000000", "max_replicas_per_service 10000")
	if n, _ := storedReplicas(st, "web"); n != limits.DefaultMaxReplicasPerService {
		t.Fatalf("refused update left %d replicas stored", n)
	}
}

func TestClusterUpdateSetsTheReplicaLimit(t *testing.T) {
	s, st := newLimitsServer(t)
	ctx := context.Background()
	set := func(n uint64) (*api.UpdateClusterResponse, error) {
		return s.UpdateCluster(ctx, &api.UpdateClusterRequest{MaxReplicasPerService: &n})
	}
	resp, err := s.UpdateCluster(ctx, &api.UpdateClusterRequest{})
	if err != nil || resp.MaxReplicasPerService != limits.DefaultMaxReplicasPerService {
		t.Fatalf("limit of a cluster that sets none: %v, %v; want the default", resp, err)
	}
	for _, bad := range []uint64{0, limits.MaxReplicasCeiling + 1} {
		if _, err := set(bad); reason.Of(err) != reason.InvalidSpec {
			t.Fatalf("limit %d: %v, want invalid_spec", bad, err)
		}
	}
	if resp, err = set(8); err != nil || resp.MaxReplicasPerService != 8 {
		t.Fatalf("set the limit to 8: %v, %v", resp, err)
	}
	st.View(func(tx store.ReadTx) {
		if got := tx.Cluster().MaxReplicasPerService; got != 8 {
			t.Fatalf("cluster object holds limit %d, want 8", got)
		}
	})
	_, err = s.CreateService(ctx, &api.CreateServiceRequest{Spec: scaled("web", 9)})
	wantLimitExceeded(t, "create over a set limit", err, "replicas 9", "max_replicas_per_service 8")
	create(t, s, scaled("web", 8))

	// Lowered below what web has, the limit stops it growing; web keeps
	// its replicas and may still change in other ways, or shrink.
	if _, err := set(5); err != nil {
		t.Fatal(err)
	}
	changed := scaled("web", 8)
	changed.Env = []string{"A=1"}
	if _, err := s.UpdateService(ctx, &api.UpdateServiceRequest{Service: "web", Spec: changed}); err != nil {
		t.Fatalf("update of web that keeps its 8 replicas under a limit of 5: %v", err)
	}
	_, err = s.UpdateService(ctx, &api.UpdateServiceRequest{Service: "web", Spec: scaled("web", 9)})
	wantLimitExceeded(t, "growing past a lowered limit", err, "max_replicas_per_service 5")
	if _, err := s.UpdateService(ctx, &api.UpdateServiceRequest{Service: "web", Spec: scaled("web", 6)}); err != nil {
		t.Fatalf("shrinking web toward a lowered limit: %v", err)
	}
}

// Every replica holds a copy of the spec: the limit on replicas alone
// would let 10 000 copies of a 2 MiB spec through.
func TestReplicasTimesSpecSizeIsBounded(t *testing.T) {
	s, st := newLimitsServer(t)
	ctx := context.Background()
	big := func(replicas uint64) *api.ServiceSpec {
		spec := scaled("web", replicas)
		spec.Env = []string{"BLOB=" + strings.Repeat("x", 256<<10)}
		return spec
	}
	_, err := s.CreateService(ctx, &api.CreateServiceRequest{Spec: big(2000)})
	wantLimitExceeded(t, "2000 replicas of a 256 KiB spec", err, "replicas 2000", "268435456 bytes")
	if _, ok := storedReplicas(st, "web"); ok {
		t.Fatal("refused create stored the service")
	}
	create(t, s, big(1000))
	_, err = s.UpdateService(ctx, &api.UpdateServiceRequest{Service: "web", Spec: big(1500)})
	wantLimitExceeded(t, "update to 1500 replicas of a 256 KiB spec", err, "replicas 1500")
}

// Services each within their own limits must not add up to more than the
// leader can hold: the count of services is a setting, replicas and
// replica spec bytes have cluster-wide bounds.
func TestServiceCountIsBounded(t *testing.T) {
	s, st := newLimitsServer(t)
	ctx := context.Background()
	resp, err := s.UpdateCluster(ctx, &api.UpdateClusterRequest{})
	if err != nil || resp.MaxServices != limits.DefaultMaxServices {
		t.Fatalf("service limit of a cluster that sets none: %v, %v; want the default", resp, err)
	}
	for _, bad := range []uint64{0, limits.MaxServicesCeiling + 1} {
		if _, err := s.UpdateCluster(ctx, &api.UpdateClusterRequest{MaxServices: &bad}); reason.Of(err) != reason.InvalidSpec {
			t.Fatalf("max_services %d: %v, want invalid_spec", bad, err)
		}
	}
	three := uint64(3)
	if resp, err := s.UpdateCluster(ctx, &api.UpdateClusterRequest{MaxServices: &three}); err != nil || resp.MaxServices != 3 {
		t.Fatalf("set max_services 3: %v, %v", resp, err)
	}
	for _, name := range []string{"a", "b", "c"} {
		create(t, s, scaled(name, 1))
	}
	_, err = s.CreateService(ctx, &api.CreateServiceRequest{Spec: scaled("d", 1)})
	wantLimitExceeded(t, "a fourth service", err, "holds 3 services", "max_services is 3")
	if _, ok := storedReplicas(st, "d"); ok {
		t.Fatal("refused create stored the service")
	}
	// Lowered below what there is, the limit removes nothing and leaves
	// the services free to change.
	one := uint64(1)
	if _, err := s.UpdateCluster(ctx, &api.UpdateClusterRequest{MaxServices: &one}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.UpdateService(ctx, &api.UpdateServiceRequest{Service: "b", Spec: scaled("b", 2)}); err != nil {
		t.Fatalf("update of b over a lowered service limit: %v", err)
	}
}

func TestClusterReplicasAreBounded(t *testing.T) {
	s, st := newLimitsServer(t)
	ctx := context.Background()
	ceiling := uint64(limits.MaxReplicasCeiling)
	if _, err := s.UpdateCluster(ctx, &api.UpdateClusterRequest{MaxReplicasPerService: &ceiling}); err != nil {
		t.Fatal(err)
	}
	create(t, s, scaled("a", limits.MaxClusterReplicas-1))
	create(t, s, scaled("b", 1))
	_, err := s.CreateService(ctx, &api.CreateServiceRequest{Spec: scaled("c", 1)})
	wantLimitExceeded(t, "one replica past the cluster's", err, "1048577 replicas", "limit of 1048576")
	_, err = s.UpdateService(ctx, &api.UpdateServiceRequest{Service: "b", Spec: scaled("b", 2)})
	wantLimitExceeded(t, "growing b past the cluster's replicas", err, "limit of 1048576")
	if n, _ := storedReplicas(st, "b"); n != 1 {
		t.Fatalf("refused update left b at %d replicas", n)
	}
	// Shrinking one makes room for the other.
	if _, err := s.UpdateService(ctx, &api.UpdateServiceRequest{Service: "a", Spec: scaled("a", limits.MaxClusterReplicas-2)}); err != nil {
		t.Fatalf("shrinking a: %v", err)
	}
	if _, err := s.UpdateService(ctx, &api.UpdateServiceRequest{Service: "b", Spec: scaled("b", 2)}); err != nil {
		t.Fatalf("growing b into the room a left: %v", err)
	}
}

func TestClusterReplicaSpecBytesAreBounded(t *testing.T) {
	s, st := newLimitsServer(t)
	ctx := context.Background()
	// 250 replicas of a 1 MiB spec each: 4 services fit in 1 GiB, not 5.
	big := func(name string) *api.ServiceSpec {
		spec := scaled(name, 250)
		spec.Env = []string{"BLOB=" + strings.Repeat("x", 1<<20)}
		return spec
	}
	for _, name := range []string{"a", "b", "c", "d"} {
		create(t, s, big(name))
	}
	_, err := s.CreateService(ctx, &api.CreateServiceRequest{Spec: big("e")})
	wantLimitExceeded(t, "a fifth 250 MiB service", err, "cluster's replica specs", "limit of 1073741824")
	if _, ok := storedReplicas(st, "e"); ok {
		t.Fatal("refused create stored the service")
	}
}
