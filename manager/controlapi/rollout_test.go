package controlapi

import (
	"context"
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/api/reason"
	"github.com/jaco-project/jaco/manager/state/store"
)

func updateSvc(t *testing.T, s *Server, req *api.UpdateServiceRequest) *api.Service {
	t.Helper()
	resp, err := s.UpdateService(context.Background(), req)
	if err != nil {
		t.Fatalf("update %s: %v", req.Service, err)
	}
	return resp.Service
}

func setState(t *testing.T, st *store.Store, name string, state api.UpdateState) {
	t.Helper()
	err := st.Update(context.Background(), func(tx *store.Tx) error {
		svc := tx.FindServiceByName(name)
		svc.UpdateStatus = &api.UpdateStatus{State: state, Message: "replica web.1 failed"}
		return tx.Update(svc)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// An update that replaces replicas starts the update machine and keeps the
// spec it replaced; one that does not (scale, policy) leaves both alone.
func TestUpdateServiceStartsAnUpdate(t *testing.T) {
	s, _ := newServiceServer(t)
	v1 := create(t, s, imageSpec("web"))
	if v1.UpdateStatus != nil || v1.PreviousSpec != nil {
		t.Fatalf("a new service has an update: %v", v1)
	}
	spec := proto.CloneOf(v1.Spec)
	spec.Replicas = 5
	spec.Update = &api.UpdatePolicy{Parallelism: 2, Delay: durationpb.New(0)}
	scaled := updateSvc(t, s, &api.UpdateServiceRequest{Service: "web", Spec: spec})
	if scaled.SpecVersion != v1.SpecVersion || scaled.UpdateStatus != nil || scaled.PreviousSpec != nil {
		t.Fatalf("scaling and a new policy started an update: version %d, status %v", scaled.SpecVersion, scaled.UpdateStatus)
	}
	spec = proto.CloneOf(spec)
	spec.Env = []string{"A=1"}
	v2 := updateSvc(t, s, &api.UpdateServiceRequest{Service: "web", Spec: spec})
	if v2.SpecVersion != v1.SpecVersion+1 {
		t.Errorf("spec_version %d after a change that replaces replicas, want %d", v2.SpecVersion, v1.SpecVersion+1)
	}
	if got := v2.UpdateStatus.GetState(); got != api.UpdateState_UPDATE_STATE_UPDATING || v2.UpdateStatus.StartedAt == nil {
		t.Errorf("update status %v, want updating with a start time", v2.UpdateStatus)
	}
	if !proto.Equal(v2.PreviousSpec, scaled.Spec) {
		t.Errorf("previous spec %v, want the spec before the change %v", v2.PreviousSpec, scaled.Spec)
	}
}

// A rollback swaps the spec with the previous one under rollback_started;
// a second returns to the spec the first left. Without a previous spec it
// is refused and changes nothing.
func TestRollbackSwapsSpecs(t *testing.T) {
	s, st := newServiceServer(t)
	create(t, s, imageSpec("web"))
	_, err := s.UpdateService(context.Background(), &api.UpdateServiceRequest{Service: "web", Rollback: true})
	wantReason(t, err, reason.InvalidSpec)
	if got := getSvc(t, st, "web"); got.SpecVersion != 1 || got.UpdateStatus != nil {
		t.Fatalf("a refused rollback changed the service: %v", got)
	}
	spec := imageSpec("web")
	spec.Env = []string{"A=1"}
	v2 := updateSvc(t, s, &api.UpdateServiceRequest{Service: "web", Spec: spec})
	back := updateSvc(t, s, &api.UpdateServiceRequest{Service: "web", Rollback: true})
	if len(back.Spec.Env) != 0 || !proto.Equal(back.PreviousSpec, v2.Spec) || back.SpecVersion != v2.SpecVersion+1 {
		t.Errorf("after rollback: spec %v previous %v version %d", back.Spec, back.PreviousSpec, back.SpecVersion)
	}
	if got := back.UpdateStatus.GetState(); got != api.UpdateState_UPDATE_STATE_ROLLBACK_STARTED {
		t.Errorf("state %v after a rollback, want rollback_started", got)
	}
	again := updateSvc(t, s, &api.UpdateServiceRequest{Service: "web", Rollback: true})
	if !proto.Equal(again.Spec, v2.Spec) {
		t.Errorf("a second rollback gave %v, want %v", again.Spec, v2.Spec)
	}
	_, err = s.UpdateService(context.Background(), &api.UpdateServiceRequest{Service: "web", Rollback: true, Spec: spec})
	wantReason(t, err, reason.InvalidSpec)
}

// The same spec sent to a paused update resumes it; to a finished one it
// changes nothing.
func TestSameSpecResumesAPausedUpdate(t *testing.T) {
	s, st := newServiceServer(t)
	create(t, s, imageSpec("web"))
	spec := imageSpec("web")
	spec.Env = []string{"A=1"}
	updateSvc(t, s, &api.UpdateServiceRequest{Service: "web", Spec: spec})
	for _, tc := range []struct{ from, want api.UpdateState }{
		{api.UpdateState_UPDATE_STATE_PAUSED, api.UpdateState_UPDATE_STATE_UPDATING},
		{api.UpdateState_UPDATE_STATE_ROLLBACK_PAUSED, api.UpdateState_UPDATE_STATE_ROLLBACK_STARTED},
		{api.UpdateState_UPDATE_STATE_COMPLETED, api.UpdateState_UPDATE_STATE_COMPLETED},
	} {
		setState(t, st, "web", tc.from)
		before := getSvc(t, st, "web")
		got := updateSvc(t, s, &api.UpdateServiceRequest{Service: "web", Spec: spec})
		if got.UpdateStatus.GetState() != tc.want || got.SpecVersion != before.SpecVersion {
			t.Errorf("same spec sent in state %v: state %v version %d, want %v version %d",
				tc.from, got.UpdateStatus.GetState(), got.SpecVersion, tc.want, before.SpecVersion)
		}
	}
}

func TestModeChangeRefused(t *testing.T) {
	s, st := newServiceServer(t)
	create(t, s, imageSpec("web"))
	spec := imageSpec("web")
	spec.Mode, spec.Replicas = api.ServiceMode_SERVICE_MODE_GLOBAL, 0
	_, err := s.UpdateService(context.Background(), &api.UpdateServiceRequest{Service: "web", Spec: spec})
	wantReason(t, err, reason.InvalidSpec)
	if got := getSvc(t, st, "web"); got.Spec.Mode != api.ServiceMode_SERVICE_MODE_REPLICATED || got.SpecVersion != 1 {
		t.Errorf("a refused mode change changed the service: %v", got)
	}
}

func getSvc(t *testing.T, st *store.Store, name string) *api.Service {
	t.Helper()
	var svc *api.Service
	st.View(func(tx store.ReadTx) { svc = tx.FindServiceByName(name) })
	if svc == nil {
		t.Fatalf("service %s missing", name)
	}
	return svc
}

func wantReason(t *testing.T, err error, word string) {
	t.Helper()
	if got := reason.Of(err); got != word {
		t.Fatalf("error %v has reason %q, want %q", err, got, word)
	}
}
