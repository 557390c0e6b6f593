package controlapi

import (
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/api/reason"
)

// TestValidateNotifyCheck: a notify health check is for hook bundles, and
// needs its watchdog period; anything else is refused invalid_spec.
func TestValidateNotifyCheck(t *testing.T) {
	notify := func(interval time.Duration) *api.HealthCheck {
		hc := &api.HealthCheck{Test: &api.HealthCheck_Notify{Notify: &api.NotifyCheck{}}, Retries: 2}
		if interval != 0 {
			hc.Interval = durationpb.New(interval)
		}
		return hc
	}
	bundle := func(hc *api.HealthCheck) *api.ServiceSpec {
		return &api.ServiceSpec{Name: "proc", Bundle: &api.HookBundle{Files: map[string][]byte{"launch": []byte("#!/bin/sh\n")}}, Health: hc}
	}
	if err := validateSpec(bundle(notify(time.Second))); err != nil {
		t.Fatalf("a bundle with a notify check every 1s: %v", err)
	}
	started := notify(time.Second)
	started.StartPeriod = durationpb.New(time.Minute)
	if err := validateSpec(bundle(started)); err != nil {
		t.Fatalf("a notify check with a start period: %v", err)
	}
	for _, tc := range []struct {
		name string
		spec *api.ServiceSpec
		want string
	}{
		{"image", &api.ServiceSpec{Name: "web", Image: "img", Health: notify(time.Second)}, "hook bundles only"},
		{"no interval", bundle(notify(0)), "needs an interval"},
		{"negative interval", bundle(notify(-time.Second)), "negative"},
	} {
		err := validateSpec(tc.spec)
		if reason.Of(err) != reason.InvalidSpec || !strings.Contains(reason.Sentence(err), tc.want) {
			t.Errorf("%s: validateSpec = %v, want invalid_spec saying %q", tc.name, err, tc.want)
		}
	}
}
