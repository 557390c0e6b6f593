package controlapi

import (
	"context"
	"fmt"
	"net"
	"slices"
	"strings"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/test/bufconn"
	"google.golang.org/protobuf/proto"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/api/paging"
	"github.com/jaco-project/jaco/api/reason"
	"github.com/jaco-project/jaco/manager/state/store/storetest"
)

// grpcLimit is gRPC's default receive limit, which jacod and jaco keep.
const grpcLimit = 4 << 20

// overGRPC serves s on an in-memory listener with gRPC's default message
// limits and returns a client of it.
func overGRPC(t *testing.T, s *Server) api.ControlServiceClient {
	t.Helper()
	lis := bufconn.Listen(1 << 20)
	srv := grpc.NewServer()
	api.RegisterControlServiceServer(srv, s)
	go func() { _ = srv.Serve(lis) }()
	t.Cleanup(srv.Stop)
	conn, err := grpc.NewClient("passthrough:///bufconn",
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return lis.DialContext(ctx) }),
		grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return api.NewControlServiceClient(conn)
}

// bigSpec is a valid spec of about 100 KB.
func bigSpec(name string) *api.ServiceSpec {
	spec := imageSpec(name)
	spec.Env = []string{"PAD=" + strings.Repeat("x", 100<<10)}
	return spec
}

// With 60 services of 100 KB (6 MB, the store of the report), listing
// them all over gRPC must work: before paging, the one reply was refused
// ResourceExhausted (6 MB vs. 4 MiB).
func TestListServicesBeyondTheMessageLimit(t *testing.T) {
	s, _ := newServiceServer(t)
	var want []string
	total := 0
	for i := range 60 {
		svc := create(t, s, bigSpec(fmt.Sprintf("svc%02d", i)))
		want = append(want, svc.Id)
		total += proto.Size(svc)
	}
	if total < grpcLimit {
		t.Fatalf("the services hold %d bytes, not beyond gRPC's %d", total, grpcLimit)
	}
	c := overGRPC(t, s)
	pages := 0
	got, err := paging.Collect(func(tok string) ([]*api.Service, string, error) {
		pages++
		resp, err := c.ListServices(context.Background(), &api.ListServicesRequest{PageToken: tok})
		return resp.GetServices(), resp.GetNextPageToken(), err
	})
	if err != nil {
		t.Fatal(err)
	}
	if pages < 2 {
		t.Errorf("%d bytes came in %d page(s)", total, pages)
	}
	slices.Sort(want)
	if ids := idsOf(got); !slices.Equal(ids, want) {
		t.Fatalf("listed %d services %v, want the %d created, in id order", len(ids), ids, len(want))
	}
	for _, svc := range got {
		if len(svc.Spec.Env[0]) != len("PAD=")+100<<10 {
			t.Fatalf("service %s came without its whole spec", svc.Spec.Name)
		}
	}
}

// Each task carries a copy of its service's spec, so the tasks outgrow a
// message sooner than the services; every filter pages the same way.
func TestListTasksBeyondTheMessageLimit(t *testing.T) {
	s, st := newServiceServer(t)
	storetest.Create(t, st, &api.Node{Id: "n2", Hostname: "w2"})
	web, db := create(t, s, bigSpec("web")), create(t, s, bigSpec("db"))
	byService := map[string][]string{}
	byNode := map[string][]string{}
	var all []string
	for i := range 80 {
		svc, node := web, "n1"
		if i%4 == 0 {
			svc = db
		}
		if i%2 == 0 {
			node = "n2"
		}
		id := fmt.Sprintf("task%03d", (i*37)%80) // created out of id order
		storetest.Create(t, st, &api.Task{Id: id, ServiceId: svc.Id, ServiceName: svc.Spec.Name, Slot: uint64(i + 1),
			NodeId: node, Spec: svc.Spec, DesiredState: api.TaskState_TASK_STATE_RUNNING})
		all = append(all, id)
		byService[svc.Spec.Name] = append(byService[svc.Spec.Name], id)
		byNode[node] = append(byNode[node], id)
	}
	c := overGRPC(t, s)
	for _, tc := range []struct {
		service, node string
		want          []string
	}{
		{"", "", all},
		{"web", "", byService["web"]},
		{db.Id, "", byService["db"]},
		{"", "w1", byNode["n1"]},
		{"", "n2", byNode["n2"]},
	} {
		got, err := paging.Collect(func(tok string) ([]*api.Task, string, error) {
			resp, err := c.ListTasks(context.Background(), &api.ListTasksRequest{Service: tc.service, Node: tc.node, PageToken: tok})
			return resp.GetTasks(), resp.GetNextPageToken(), err
		})
		if err != nil {
			t.Fatalf("tasks of service %q node %q: %v", tc.service, tc.node, err)
		}
		want := slices.Sorted(slices.Values(tc.want))
		if ids := idsOf(got); !slices.Equal(ids, want) {
			t.Errorf("tasks of service %q node %q: %v, want %v", tc.service, tc.node, ids, want)
		}
	}
}

func TestListPagesBySizeAndRefusesForeignTokens(t *testing.T) {
	s, st := newServiceServer(t)
	storetest.Create(t, st, &api.Node{Id: "n3", Hostname: "a"}, &api.Node{Id: "n2", Hostname: "b"})
	c := overGRPC(t, s)
	var sizes []int
	got, err := paging.Collect(func(tok string) ([]*api.Node, string, error) {
		resp, err := c.ListNodes(context.Background(), &api.ListNodesRequest{PageSize: 2, PageToken: tok})
		sizes = append(sizes, len(resp.GetNodes()))
		return resp.GetNodes(), resp.GetNextPageToken(), err
	})
	if err != nil {
		t.Fatal(err)
	}
	if ids := idsOf(got); !slices.Equal(ids, []string{"n1", "n2", "n3"}) || !slices.Equal(sizes, []int{2, 1}) {
		t.Fatalf("nodes %v in pages of %v, want n1 n2 n3 in pages of 2 and 1", ids, sizes)
	}
	_, err = c.ListServices(context.Background(), &api.ListServicesRequest{PageToken: "svc05"})
	if reason.Of(err) != reason.InvalidPageToken {
		t.Fatalf("a token the server did not give: %v, want invalid_page_token", err)
	}
}

func idsOf[T interface{ GetId() string }](objs []T) []string {
	ids := make([]string, len(objs))
	for i, o := range objs {
		ids[i] = o.GetId()
	}
	return ids
}

// No object may be too big for one message, or no page holding it could
// be sent: a spec beyond maxSpecBytes is refused, at create and at update,
// and the largest one accepted still lists over gRPC (as a service and as
// a task carrying it).
func TestSpecSizeBoundKeepsEveryObjectListable(t *testing.T) {
	s, st := newServiceServer(t)
	// pad grows spec to total bytes encoded (less the few its lengths'
	// varints take as they grow).
	pad := func(spec *api.ServiceSpec, total int) *api.ServiceSpec {
		spec.Env = []string{"PAD="}
		spec.Env[0] += strings.Repeat("x", total-proto.Size(spec))
		spec.Env[0] = spec.Env[0][:len(spec.Env[0])-(proto.Size(spec)-total)]
		return spec
	}
	over := pad(imageSpec("big"), maxSpecBytes+1)
	if _, err := s.CreateService(context.Background(), &api.CreateServiceRequest{Spec: over}); reason.Of(err) != reason.InvalidSpec {
		t.Fatalf("create with a %d-byte spec: %v, want invalid_spec", proto.Size(over), err)
	}
	atLimit := pad(imageSpec("big"), maxSpecBytes)
	svc := create(t, s, atLimit)
	over = pad(imageSpec("big"), maxSpecBytes+1)
	if _, err := s.UpdateService(context.Background(), &api.UpdateServiceRequest{Service: "big", Spec: over}); reason.Of(err) != reason.InvalidSpec {
		t.Fatalf("update to a %d-byte spec: %v, want invalid_spec", proto.Size(over), err)
	}
	// A full hook bundle fits within the bound.
	bundle := &api.ServiceSpec{Name: "hooks", Bundle: &api.HookBundle{Files: map[string][]byte{
		"launch": make([]byte, maxBundleBytes/2), "prepare": make([]byte, maxBundleBytes/2)}}}
	create(t, s, bundle)
	storetest.Create(t, st, &api.Task{Id: "t1", ServiceId: svc.Id, ServiceName: "big", Spec: svc.Spec,
		Status: &api.TaskStatus{Message: strings.Repeat("m", 64<<10)}})
	c := overGRPC(t, s)
	for _, size := range []uint32{0, 1} {
		svcs, err := c.ListServices(context.Background(), &api.ListServicesRequest{PageSize: size})
		if err != nil || len(svcs.GetServices()) == 0 {
			t.Fatalf("list services, page size %d: %v", size, err)
		}
		tasks, err := c.ListTasks(context.Background(), &api.ListTasksRequest{PageSize: size})
		if err != nil || len(tasks.GetTasks()) != 1 {
			t.Fatalf("list tasks, page size %d: %v", size, err)
		}
	}
	if _, err := c.GetService(context.Background(), &api.GetServiceRequest{Service: "big"}); err != nil {
		t.Fatal(err)
	}
}

// TestListsCountReplicas: service and node listings carry each item's
// replicas as the manager counts them (live: desired running; running:
// of those, running), so `service ls` and `status` need no task list.
func TestListsCountReplicas(t *testing.T) {
	s, st := newServiceServer(t)
	storetest.Create(t, st, &api.Node{Id: "n2", Hostname: "w2"})
	web := create(t, s, imageSpec("web"))
	db := create(t, s, imageSpec("db"))
	storetest.Create(t, st,
		task(web, "w1", 1, "n1", running, running, 1),
		task(web, "w2", 2, "n2", running, running, 1),
		task(web, "w3", 3, "n2", running, pending, 1),
		task(web, "w0", 1, "n1", shutdown, running, 1), // stopping: not live
		task(db, "d1", 1, "n2", running, starting, 1),
	)
	svcs, err := s.ListServices(context.Background(), &api.ListServicesRequest{})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]*api.ReplicaCount{web.Id: {Live: 3, Running: 2}, db.Id: {Live: 1}}
	if len(svcs.Counts) != len(svcs.Services) {
		t.Fatalf("%d counts for %d services", len(svcs.Counts), len(svcs.Services))
	}
	for i, svc := range svcs.Services {
		if !proto.Equal(svcs.Counts[i], want[svc.Id]) {
			t.Errorf("service %s counted %v, want %v", svc.Spec.Name, svcs.Counts[i], want[svc.Id])
		}
	}
	nodes, err := s.ListNodes(context.Background(), &api.ListNodesRequest{})
	if err != nil {
		t.Fatal(err)
	}
	wantNodes := map[string]*api.ReplicaCount{"n1": {Live: 1, Running: 1}, "n2": {Live: 3, Running: 1}}
	for i, n := range nodes.Nodes {
		if !proto.Equal(nodes.Counts[i], wantNodes[n.Id]) {
			t.Errorf("node %s counted %v, want %v", n.Hostname, nodes.Counts[i], wantNodes[n.Id])
		}
	}
}
