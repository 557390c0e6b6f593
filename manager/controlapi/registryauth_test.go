package controlapi

import (
	"context"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/manager/state/store"
	"github.com/jaco-project/jaco/manager/state/store/storetest"
)

func storedAuth(st *store.Store, id string) (auth *api.RegistryAuth) {
	st.View(func(tx store.ReadTx) { auth = tx.GetService(id).GetSpec().GetRegistryAuth() })
	return auth
}

// No Control API answer carries a service's registry credentials, the
// store keeps them for the agents, and an update that sends none keeps
// them.
func TestRegistryAuthNeverLeaves(t *testing.T) {
	s, st := newServiceServer(t)
	ctx := context.Background()
	auth := &api.RegistryAuth{Server: "198.18.0.2:5000", Username: "u", Password: "secret"}
	spec := imageSpec("web")
	spec.RegistryAuth = auth
	svc := create(t, s, spec)
	storetest.Create(t, st, &api.Task{Id: "t1", ServiceId: svc.Id, ServiceName: "web", Slot: 1, NodeId: "n1",
		Spec: proto.Clone(spec).(*api.ServiceSpec), DesiredState: api.TaskState_TASK_STATE_RUNNING})

	leaks := func(what string, spec *api.ServiceSpec) {
		t.Helper()
		if spec.GetRegistryAuth() != nil {
			t.Errorf("%s shows the registry credentials", what)
		}
	}
	leaks("create's answer", svc.Spec)
	get, err := s.GetService(ctx, &api.GetServiceRequest{Service: "web"})
	if err != nil {
		t.Fatal(err)
	}
	leaks("get", get.Service.Spec)
	list, err := s.ListServices(ctx, &api.ListServicesRequest{})
	if err != nil || len(list.Services) != 1 {
		t.Fatalf("list services: %v %v", list, err)
	}
	leaks("list services", list.Services[0].Spec)
	tasks, err := s.ListTasks(ctx, &api.ListTasksRequest{Service: "web"})
	if err != nil || len(tasks.Tasks) != 1 {
		t.Fatalf("list tasks: %v %v", tasks, err)
	}
	leaks("list tasks", tasks.Tasks[0].Spec)
	leaks("watch", s.serviceProgress(svc.Id).Service.GetSpec())
	if !proto.Equal(storedAuth(st, svc.Id), auth) {
		t.Fatalf("stored credentials %v, want %v", storedAuth(st, svc.Id), auth)
	}
	var task *api.Task
	st.View(func(tx store.ReadTx) { task = tx.GetTask("t1") })
	if !proto.Equal(task.GetSpec().GetRegistryAuth(), auth) {
		t.Fatalf("the task as stored (what the dispatcher sends) lost its credentials: %v", task.GetSpec().GetRegistryAuth())
	}

	// What a client reads back and sends again, changed, keeps them.
	next := get.Service.Spec
	next.Replicas = 5
	up, err := s.UpdateService(ctx, &api.UpdateServiceRequest{Service: "web", Version: get.Service.Meta.GetVersion(), Spec: next})
	if err != nil {
		t.Fatal(err)
	}
	leaks("update's answer", up.Service.Spec)
	if !proto.Equal(storedAuth(st, svc.Id), auth) {
		t.Fatalf("an update without credentials changed them to %v", storedAuth(st, svc.Id))
	}
	newAuth := &api.RegistryAuth{Server: "198.18.0.2:5000", IdentityToken: "tok"}
	next = proto.Clone(next).(*api.ServiceSpec)
	next.RegistryAuth = newAuth
	if _, err := s.UpdateService(ctx, &api.UpdateServiceRequest{Service: "web", Version: up.Service.Meta.GetVersion(), Spec: next}); err != nil {
		t.Fatal(err)
	}
	if !proto.Equal(storedAuth(st, svc.Id), newAuth) {
		t.Fatalf("stored credentials %v after an update sending new ones", storedAuth(st, svc.Id))
	}
}
