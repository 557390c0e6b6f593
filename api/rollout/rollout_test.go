package rollout

import (
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/jaco-project/jaco/api"
)

func TestReplaces(t *testing.T) {
	hostPort := func() []*api.PortConfig {
		return []*api.PortConfig{{PublishedPort: 8080, TargetPort: 80, PublishMode: api.PublishMode_PUBLISH_MODE_HOST}}
	}
	base := &api.ServiceSpec{Name: "web", Image: "i", Replicas: 3, Ports: hostPort()}
	for _, tc := range []struct {
		name   string
		change func(*api.ServiceSpec)
		want   bool
	}{
		{"nothing", func(*api.ServiceSpec) {}, false},
		{"replicas", func(s *api.ServiceSpec) { s.Replicas = 9 }, false},
		{"update policy", func(s *api.ServiceSpec) { s.Update = &api.UpdatePolicy{Parallelism: 4} }, false},
		{"rollback policy", func(s *api.ServiceSpec) { s.Rollback = &api.UpdatePolicy{Parallelism: 4} }, false},
		{"env", func(s *api.ServiceSpec) { s.Env = []string{"A=1"} }, true},
		{"force", func(s *api.ServiceSpec) { s.ForceUpdate++ }, true},
		{"endpoint mode", func(s *api.ServiceSpec) { s.EndpointMode = api.EndpointMode_ENDPOINT_MODE_DNSRR }, false},
		{"an ingress port", func(s *api.ServiceSpec) {
			s.Ports = []*api.PortConfig{{PublishedPort: 8080, TargetPort: 80}}
		}, true},
		{"a port's publish mode", func(s *api.ServiceSpec) {
			s.Ports[0].PublishMode = api.PublishMode_PUBLISH_MODE_INGRESS
		}, true},
	} {
		b := &api.ServiceSpec{Name: "web", Image: "i", Replicas: 3, Ports: hostPort()}
		tc.change(b)
		if got := Replaces(base, b); got != tc.want {
			t.Errorf("%s: Replaces = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestPolicyDefaults(t *testing.T) {
	def := Update(&api.ServiceSpec{})
	if def.Parallelism != 1 || def.Monitor != DefaultMonitor || def.Action != api.UpdateFailureAction_UPDATE_FAILURE_ACTION_PAUSE || def.StartFirst {
		t.Errorf("unset policy resolves to %+v, want Swarm's defaults", def)
	}
	set := Update(&api.ServiceSpec{Update: &api.UpdatePolicy{Parallelism: 0, Monitor: durationpb.New(0), Order: api.UpdateOrder_UPDATE_ORDER_START_FIRST}})
	if set.Parallelism != 0 || set.Monitor != 0 || !set.StartFirst {
		t.Errorf("explicit zeros were overridden: %+v", set)
	}
	if got := Update(&api.ServiceSpec{Update: &api.UpdatePolicy{Delay: durationpb.New(time.Second)}}).Monitor; got != DefaultMonitor {
		t.Errorf("unset monitor in a set policy = %v, want %v", got, DefaultMonitor)
	}
	rb := Rollback(&api.ServiceSpec{Rollback: &api.UpdatePolicy{FailureAction: api.UpdateFailureAction_UPDATE_FAILURE_ACTION_ROLLBACK}})
	if rb.Action != api.UpdateFailureAction_UPDATE_FAILURE_ACTION_PAUSE {
		t.Errorf("a rollback's failure action resolves to %v: a rollback must not roll itself back", rb.Action)
	}
}
