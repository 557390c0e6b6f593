package controlapi

import "github.com/jaco-project/jaco/api"

// A service's registry credentials go to the agents that pull its image
// (the dispatcher sends tasks as stored) and to no Control API caller:
// every service or task this package answers with passes through these,
// which only ever change the clones the store hands out.

// withoutRegistryAuth removes the credentials from svc's specs.
func withoutRegistryAuth(svc *api.Service) *api.Service {
	if svc == nil {
		return nil
	}
	if svc.Spec != nil {
		svc.Spec.RegistryAuth = nil
	}
	if svc.PreviousSpec != nil {
		svc.PreviousSpec.RegistryAuth = nil
	}
	return svc
}

// taskWithoutRegistryAuth removes the credentials from t's spec.
func taskWithoutRegistryAuth(t *api.Task) *api.Task {
	if t != nil && t.Spec != nil {
		t.Spec.RegistryAuth = nil
	}
	return t
}

// keepRegistryAuth gives spec the credentials of the spec it replaces
// when it has none: a client never reads them back (GetService strips
// them), so an update that does not send new ones (service update
// without --with-registry-auth) keeps those the service has.
func keepRegistryAuth(spec, stored *api.ServiceSpec) {
	if spec.GetRegistryAuth() == nil && stored != nil {
		spec.RegistryAuth = stored.GetRegistryAuth()
	}
}
