package controlapi

import (
	"context"
	"slices"
	"testing"

	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/api/reason"
	"github.com/jaco-project/jaco/manager/state/store"
	"github.com/jaco-project/jaco/manager/state/store/storetest"
)

func newServiceServer(t *testing.T) (*Server, *store.Store) {
	t.Helper()
	st := storetest.New(t)
	storetest.Create(t, st, &api.Node{Id: "n1", Hostname: "w1"})
	return New(st), st
}

func imageSpec(name string, deps ...string) *api.ServiceSpec {
	return &api.ServiceSpec{Name: name, Image: "jaco.local/busybox:latest", Replicas: 3, DependsOn: deps}
}

func create(t *testing.T, s *Server, spec *api.ServiceSpec) *api.Service {
	t.Helper()
	resp, err := s.CreateService(context.Background(), &api.CreateServiceRequest{Spec: spec})
	if err != nil {
		t.Fatalf("create %s: %v", spec.Name, err)
	}
	return resp.Service
}

func TestCreateServiceRefusesBadSpecsAndChangesNothing(t *testing.T) {
	s, st := newServiceServer(t)
	create(t, s, imageSpec("db"))
	bundle := &api.HookBundle{Files: map[string][]byte{"prepare": []byte("#!/bin/sh\n")}}
	for _, tc := range []struct {
		name string
		spec *api.ServiceSpec
	}{
		{"nil spec", nil},
		{"bad name", imageSpec("Web App")},
		{"no image or bundle", &api.ServiceSpec{Name: "x"}},
		{"image and bundle", &api.ServiceSpec{Name: "x", Image: "i", Bundle: &api.HookBundle{Files: map[string][]byte{"launch": nil}}}},
		{"bundle without launch", &api.ServiceSpec{Name: "x", Bundle: bundle}},
		{"unknown hook", &api.ServiceSpec{Name: "x", Bundle: &api.HookBundle{Files: map[string][]byte{"launch": nil, "evil": nil}}}},
		{"global with replicas", &api.ServiceSpec{Name: "x", Image: "i", Mode: api.ServiceMode_SERVICE_MODE_GLOBAL, Replicas: 2}},
		{"env without =", &api.ServiceSpec{Name: "x", Image: "i", Env: []string{"FOO"}}},
		{"relative mount", &api.ServiceSpec{Name: "x", Image: "i", Mounts: []*api.Mount{{Source: "data", Target: "/data"}}}},
		{"port twice", &api.ServiceSpec{Name: "x", Image: "i", Ports: []*api.PortConfig{{TargetPort: 80, PublishedPort: 8080}, {TargetPort: 81, PublishedPort: 8080}}}},
		{"bad protocol", &api.ServiceSpec{Name: "x", Image: "i", Ports: []*api.PortConfig{{Protocol: "sctp", TargetPort: 80}}}},
		{"negative grace", &api.ServiceSpec{Name: "x", Image: "i", StopGracePeriod: durationpb.New(-1)}},
		{"empty health", &api.ServiceSpec{Name: "x", Image: "i", Health: &api.HealthCheck{}}},
		{"self dependency", imageSpec("x", "x")},
		{"unknown dependency", imageSpec("x", "nope")},
		{"pinned to unknown node", &api.ServiceSpec{Name: "x", Image: "i", Placement: &api.Placement{PinNode: "ghost"}}},
		{"name taken", imageSpec("db")},
		{"bad constraint", &api.ServiceSpec{Name: "x", Image: "i", Placement: &api.Placement{Constraints: []string{"node.labels.zone=a"}}}},
		{"unknown endpoint mode", &api.ServiceSpec{Name: "x", Image: "i", EndpointMode: 7}},
		{"bad spread", &api.ServiceSpec{Name: "x", Image: "i", Placement: &api.Placement{Spread: []string{"zone"}}}},
	} {
		_, err := s.CreateService(context.Background(), &api.CreateServiceRequest{Spec: tc.spec})
		if reason.Of(err) != reason.InvalidSpec {
			t.Errorf("%s: err = %v, want invalid_spec", tc.name, err)
		}
	}
	st.View(func(tx store.ReadTx) {
		if n := len(tx.ListServices()); n != 1 {
			t.Errorf("%d services stored after refusals, want 1", n)
		}
	})
}

func TestDependencyCycleRefusedOnUpdate(t *testing.T) {
	s, _ := newServiceServer(t)
	create(t, s, imageSpec("db"))
	create(t, s, imageSpec("api", "db"))
	create(t, s, imageSpec("web", "api"))
	_, err := s.UpdateService(context.Background(), &api.UpdateServiceRequest{Service: "db", Spec: imageSpec("db", "web")})
	if reason.Of(err) != reason.InvalidSpec {
		t.Fatalf("db -> web -> api -> db accepted: %v", err)
	}
	_, err = s.RemoveService(context.Background(), &api.RemoveServiceRequest{Service: "db"})
	if reason.Of(err) != reason.InvalidSpec {
		t.Fatalf("removing a dependency: %v, want invalid_spec", err)
	}
}

func TestUpdateServiceVersions(t *testing.T) {
	s, _ := newServiceServer(t)
	svc := create(t, s, imageSpec("web"))
	if svc.SpecVersion != 1 {
		t.Fatalf("new service spec_version %d, want 1", svc.SpecVersion)
	}
	scaled := imageSpec("web")
	scaled.Replicas = 5
	resp, err := s.UpdateService(context.Background(), &api.UpdateServiceRequest{Service: "web", Version: svc.Meta.Version, Spec: scaled})
	if err != nil {
		t.Fatal(err)
	}
	if resp.Service.SpecVersion != 1 || resp.Service.Spec.Replicas != 5 {
		t.Fatalf("scaling: spec_version %d replicas %d; want 1 (replicas kept) and 5", resp.Service.SpecVersion, resp.Service.Spec.Replicas)
	}
	// An update based on the old version lost the race.
	_, err = s.UpdateService(context.Background(), &api.UpdateServiceRequest{Service: "web", Version: svc.Meta.Version, Spec: imageSpec("web")})
	if reason.Of(err) != reason.VersionConflict {
		t.Fatalf("stale update: %v, want version_conflict", err)
	}
	changed := imageSpec("web")
	changed.Env = []string{"A=1"}
	resp, err = s.UpdateService(context.Background(), &api.UpdateServiceRequest{Service: svc.Id, Spec: changed})
	if err != nil || resp.Service.SpecVersion != 2 {
		t.Fatalf("env change: %v, spec_version %d; want 2", err, resp.GetService().GetSpecVersion())
	}
}

// The filters narrow the listing, which comes in id order.
func TestListTasksFilters(t *testing.T) {
	s, st := newServiceServer(t)
	svc := create(t, s, imageSpec("web"))
	storetest.Create(t, st,
		&api.Task{Id: "t2", ServiceId: svc.Id, ServiceName: "web", Slot: 2, NodeId: "n1"},
		&api.Task{Id: "t1", ServiceId: svc.Id, ServiceName: "web", Slot: 1},
		&api.Task{Id: "t3", ServiceId: "other", ServiceName: "other", Slot: 1, NodeId: "n1"},
	)
	for _, tc := range []struct {
		req  *api.ListTasksRequest
		want []string
	}{
		{&api.ListTasksRequest{Service: "web"}, []string{"t1", "t2"}},
		{&api.ListTasksRequest{Node: "w1"}, []string{"t2", "t3"}},
		{&api.ListTasksRequest{Service: "web", Node: "n1"}, []string{"t2"}},
	} {
		resp, err := s.ListTasks(context.Background(), tc.req)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, task := range resp.Tasks {
			got = append(got, task.Id)
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("ListTasks(%v) = %v, want %v", tc.req, got, tc.want)
		}
	}
	if _, err := s.ListTasks(context.Background(), &api.ListTasksRequest{Service: "nope"}); reason.Of(err) != reason.NotFound {
		t.Fatalf("unknown service: %v", err)
	}
}

func TestUpdateNodeAvailabilityAndLabels(t *testing.T) {
	s, _ := newServiceServer(t)
	pause := api.NodeAvailability_NODE_AVAILABILITY_PAUSE
	resp, err := s.UpdateNode(context.Background(), &api.UpdateNodeRequest{Node: "w1", Availability: &pause, SetLabels: map[string]string{"zone": "a", "disk": "ssd"}})
	if err != nil {
		t.Fatal(err)
	}
	if resp.Node.Availability != pause || resp.Node.Labels["zone"] != "a" {
		t.Fatalf("node after update: %v", resp.Node)
	}
	resp, err = s.UpdateNode(context.Background(), &api.UpdateNodeRequest{Node: "n1", RemoveLabels: []string{"disk"}})
	if err != nil || len(resp.Node.Labels) != 1 || resp.Node.Availability != pause {
		t.Fatalf("remove label: %v %v", resp.GetNode(), err)
	}
	if _, err := s.UpdateNode(context.Background(), &api.UpdateNodeRequest{Node: "n1", SetLabels: map[string]string{"bad key": "x"}}); reason.Of(err) != reason.InvalidSpec {
		t.Fatalf("bad label key: %v", err)
	}
}
