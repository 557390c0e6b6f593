package controlapi

import (
	"math"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/api/reason"
)

// TestValidateSpecUpdatePolicies: a policy the update machine could not
// follow is refused invalid_spec, naming the field, before anything is
// written; the defaults and every value in range pass.
func TestValidateSpecUpdatePolicies(t *testing.T) {
	spec := func(update, rollback *api.UpdatePolicy) *api.ServiceSpec {
		return &api.ServiceSpec{Name: "web", Image: "img", Update: update, Rollback: rollback}
	}
	good := []*api.ServiceSpec{
		spec(nil, nil),
		spec(&api.UpdatePolicy{}, &api.UpdatePolicy{}),
		spec(&api.UpdatePolicy{
			Parallelism: 0, Delay: durationpb.New(time.Hour), Monitor: durationpb.New(0),
			Order: api.UpdateOrder_UPDATE_ORDER_START_FIRST, FailureAction: api.UpdateFailureAction_UPDATE_FAILURE_ACTION_ROLLBACK,
			MaxFailureRatio: 1,
		}, &api.UpdatePolicy{
			Parallelism: 5, Order: api.UpdateOrder_UPDATE_ORDER_STOP_FIRST,
			FailureAction: api.UpdateFailureAction_UPDATE_FAILURE_ACTION_CONTINUE, MaxFailureRatio: 0.5,
		}),
	}
	for _, s := range good {
		if err := validateSpec(s); err != nil {
			t.Errorf("validateSpec(update %v, rollback %v) = %v, want nil", s.Update, s.Rollback, err)
		}
	}
	for _, tc := range []struct {
		spec *api.ServiceSpec
		want string // the field, as the refusal names it
	}{
		{spec(&api.UpdatePolicy{MaxFailureRatio: 1.5}, nil), "update.max_failure_ratio 1.5: want 0 to 1"},
		{spec(&api.UpdatePolicy{MaxFailureRatio: -0.1}, nil), "update.max_failure_ratio"},
		{spec(&api.UpdatePolicy{MaxFailureRatio: math.NaN()}, nil), "update.max_failure_ratio NaN"},
		{spec(&api.UpdatePolicy{Delay: durationpb.New(-time.Second)}, nil), "update.delay -1s"},
		{spec(&api.UpdatePolicy{Delay: durationpb.New(time.Hour + 1)}, nil), "update.delay"},
		{spec(&api.UpdatePolicy{Monitor: durationpb.New(-1)}, nil), "update.monitor"},
		{spec(&api.UpdatePolicy{Monitor: durationpb.New(5 * time.Hour)}, nil), "update.monitor 5h0m0s"},
		{spec(&api.UpdatePolicy{Order: 7}, nil), "update.order 7"},
		{spec(&api.UpdatePolicy{FailureAction: 9}, nil), "update.failure_action 9"},
		{spec(nil, &api.UpdatePolicy{MaxFailureRatio: 2}), "rollback.max_failure_ratio 2"},
		{spec(nil, &api.UpdatePolicy{Monitor: durationpb.New(2 * time.Hour)}), "rollback.monitor"},
		{spec(nil, &api.UpdatePolicy{Order: -1}), "rollback.order"},
		{spec(nil, &api.UpdatePolicy{FailureAction: api.UpdateFailureAction_UPDATE_FAILURE_ACTION_ROLLBACK}), "rollback.failure_action rollback"},
	} {
		err := validateSpec(tc.spec)
		if reason.Of(err) != reason.InvalidSpec || !strings.Contains(reason.Sentence(err), tc.want) {
			t.Errorf("validateSpec(update %v, rollback %v) = %v, want invalid_spec naming %q", tc.spec.Update, tc.spec.Rollback, err, tc.want)
		}
	}
}

// TestValidateSpecEndpointMode: vip (also unset) and dnsrr pass; any other
// value is refused invalid_spec, naming the field.
func TestValidateSpecEndpointMode(t *testing.T) {
	for mode := range api.EndpointMode_name {
		spec := &api.ServiceSpec{Name: "web", Image: "img", EndpointMode: api.EndpointMode(mode)}
		if err := validateSpec(spec); err != nil {
			t.Errorf("endpoint mode %v: %v, want nil", spec.EndpointMode, err)
		}
	}
	err := validateSpec(&api.ServiceSpec{Name: "web", Image: "img", EndpointMode: 3})
	if reason.Of(err) != reason.InvalidSpec || !strings.Contains(reason.Sentence(err), "endpoint_mode 3") {
		t.Errorf("endpoint mode 3: %v, want invalid_spec naming endpoint_mode 3", err)
	}
}
