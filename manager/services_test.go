package manager

import (
	"reflect"
	"testing"

	"github.com/jaco-project/jaco/api"
)

// TestEveryServiceDescHasItsImplementation: the daemon registers
// ServiceDescs before a manager runs and routes calls to Service; a
// service missing here would answer every call with an error, and one of
// the wrong type would panic in the generated handler.
func TestEveryServiceDescHasItsImplementation(t *testing.T) {
	m, _, _ := openTestManager(t)
	for _, desc := range ServiceDescs {
		impl := m.Service(desc.ServiceName)
		if impl == nil {
			t.Errorf("%s: no implementation", desc.ServiceName)
			continue
		}
		if want := reflect.TypeOf(desc.HandlerType).Elem(); !reflect.TypeOf(impl).Implements(want) {
			t.Errorf("%s: %T does not implement %s", desc.ServiceName, impl, want)
		}
	}
	if len(m.services) != len(ServiceDescs) {
		t.Errorf("the manager builds %d services, ServiceDescs lists %d", len(m.services), len(ServiceDescs))
	}
}

// TestLocalReadHonoursConsistency: an unset or local consistency is served
// at once; a linearizable read passes the read barrier on a lone leader,
// which is its own quorum.
func TestLocalReadHonoursConsistency(t *testing.T) {
	m, _, _ := openTestManager(t)
	for _, req := range []any{
		&api.GetServiceRequest{Service: "bench-service"},
		&api.ListServicesRequest{Consistency: api.ReadConsistency_READ_CONSISTENCY_LOCAL},
		&api.GetServiceRequest{Service: "bench-service", Consistency: api.ReadConsistency_READ_CONSISTENCY_LINEARIZABLE},
		&api.ServiceLogsRequest{},
	} {
		if err := m.LocalRead(t.Context(), req); err != nil {
			t.Errorf("LocalRead(%T %v) = %v, want nil", req, req, err)
		}
	}
	if got := consistencyOf(&api.ServiceLogsRequest{}); got != api.ReadConsistency_READ_CONSISTENCY_LOCAL {
		t.Errorf("a request without a consistency field reads as %v, want LOCAL", got)
	}
}
