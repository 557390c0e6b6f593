package manager

import (
	"reflect"
	"testing"
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
