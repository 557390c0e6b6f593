package main

import (
	"bytes"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/jaco-project/jaco/api"
)

// applyFlags parses args as `service create` (all) or `service update`
// flags and applies them to spec.
func applyFlags(t *testing.T, spec *api.ServiceSpec, all bool, args ...string) {
	t.Helper()
	var f specFlags
	cmd := &cobra.Command{}
	f.register(cmd.Flags())
	if err := cmd.Flags().Parse(args); err != nil {
		t.Fatalf("parse %q: %v", args, err)
	}
	if err := f.apply(cmd, spec, all); err != nil {
		t.Fatalf("apply %q: %v", args, err)
	}
}

func policy(change func(p *api.UpdatePolicy)) *api.UpdatePolicy {
	p := defaultPolicy()
	change(p)
	return p
}

// TestPolicyFlags: no policy flag leaves the policy as it was (nil: the
// server's defaults); a policy flag on create writes the whole policy
// from the defaults; on update only the flags given change.
func TestPolicyFlags(t *testing.T) {
	for _, tc := range []struct {
		name             string
		all              bool
		cur              *api.UpdatePolicy // update and rollback before
		args             []string
		update, rollback *api.UpdatePolicy
	}{
		{name: "create without policy flags", all: true},
		{name: "create with one update flag", all: true, args: []string{"--update-delay", "2s"},
			update: policy(func(p *api.UpdatePolicy) { p.Delay = durationpb.New(2 * time.Second) })},
		{name: "create with every update flag", all: true, args: []string{
			"--update-parallelism", "0", "--update-delay", "1m", "--update-order", "start-first",
			"--update-failure-action", "rollback", "--update-monitor", "30s", "--update-max-failure-ratio", "0.25"},
			update: &api.UpdatePolicy{Parallelism: 0, Delay: durationpb.New(time.Minute), Order: api.UpdateOrder_UPDATE_ORDER_START_FIRST,
				FailureAction: api.UpdateFailureAction_UPDATE_FAILURE_ACTION_ROLLBACK, Monitor: durationpb.New(30 * time.Second), MaxFailureRatio: 0.25}},
		{name: "create with rollback flags", all: true, args: []string{
			"--rollback-parallelism", "3", "--rollback-failure-action", "continue", "--rollback-order", "start-first",
			"--rollback-delay", "0s", "--rollback-monitor", "1s", "--rollback-max-failure-ratio", "1"},
			rollback: &api.UpdatePolicy{Parallelism: 3, Delay: durationpb.New(0), Order: api.UpdateOrder_UPDATE_ORDER_START_FIRST,
				FailureAction: api.UpdateFailureAction_UPDATE_FAILURE_ACTION_CONTINUE, Monitor: durationpb.New(time.Second), MaxFailureRatio: 1}},
		{name: "update without policy flags keeps them", args: []string{"--replicas", "2"},
			cur:      &api.UpdatePolicy{Parallelism: 4, Order: api.UpdateOrder_UPDATE_ORDER_START_FIRST},
			update:   &api.UpdatePolicy{Parallelism: 4, Order: api.UpdateOrder_UPDATE_ORDER_START_FIRST},
			rollback: &api.UpdatePolicy{Parallelism: 4, Order: api.UpdateOrder_UPDATE_ORDER_START_FIRST}},
		{name: "update changes only the flags given", args: []string{"--update-monitor", "10s"},
			cur: &api.UpdatePolicy{Parallelism: 4, Order: api.UpdateOrder_UPDATE_ORDER_START_FIRST, MaxFailureRatio: 0.5},
			update: &api.UpdatePolicy{Parallelism: 4, Order: api.UpdateOrder_UPDATE_ORDER_START_FIRST, MaxFailureRatio: 0.5,
				Monitor: durationpb.New(10 * time.Second)},
			rollback: &api.UpdatePolicy{Parallelism: 4, Order: api.UpdateOrder_UPDATE_ORDER_START_FIRST, MaxFailureRatio: 0.5}},
		{name: "update of a service without a policy starts from the defaults", args: []string{"--rollback-parallelism", "2"},
			rollback: policy(func(p *api.UpdatePolicy) { p.Parallelism = 2 })},
	} {
		spec := &api.ServiceSpec{Name: "web", Image: "img", Update: proto.Clone(tc.cur).(*api.UpdatePolicy),
			Rollback: proto.Clone(tc.cur).(*api.UpdatePolicy)}
		if tc.cur == nil {
			spec.Update, spec.Rollback = nil, nil
		}
		applyFlags(t, spec, tc.all, tc.args...)
		if !proto.Equal(spec.Update, tc.update) || !proto.Equal(spec.Rollback, tc.rollback) {
			t.Errorf("%s: update %v, rollback %v; want %v, %v", tc.name, spec.Update, spec.Rollback, tc.update, tc.rollback)
		}
	}
}

// TestSpecFlagsAppliedOnCreate: sizes and the key=value mount form reach
// the spec.
func TestSpecFlagsAppliedOnCreate(t *testing.T) {
	spec := &api.ServiceSpec{Name: "web", Image: "img"}
	applyFlags(t, spec, true, "--limit-memory", "1.5G", "--reserve-memory", "64MB",
		"--mount", "type=bind,source=/srv,target=/data,readonly", "--mount", "/a:/b")
	if spec.Limits.GetMemoryBytes() != 3<<29 || spec.Reservations.GetMemoryBytes() != 64<<20 {
		t.Errorf("limits %v, reservations %v; want 1.5 GiB and 64 MiB", spec.Limits, spec.Reservations)
	}
	want := []*api.Mount{{Source: "/srv", Target: "/data", Readonly: true}, {Source: "/a", Target: "/b"}}
	if len(spec.Mounts) != 2 || !proto.Equal(spec.Mounts[0], want[0]) || !proto.Equal(spec.Mounts[1], want[1]) {
		t.Errorf("mounts %v, want %v", spec.Mounts, want)
	}
	if spec.Update != nil || spec.Rollback != nil {
		t.Errorf("policies %v, %v without policy flags; want nil (the defaults)", spec.Update, spec.Rollback)
	}

	spec = &api.ServiceSpec{Name: "web", Image: "img"}
	applyFlags(t, spec, true, "--mode", "global", "--restart-condition", "on-failure", "-p", "8080:80", "-p", "53:53/udp",
		"--placement-pref", "spread=node.labels.zone", "--health-http", "8080/healthz")
	if spec.Mode != api.ServiceMode_SERVICE_MODE_GLOBAL || spec.Replicas != 0 ||
		spec.Restart.GetCondition() != api.RestartCondition_RESTART_CONDITION_ON_FAILURE || len(spec.Ports) != 2 ||
		!slices.Equal(spec.Placement.GetSpread(), []string{"node.labels.zone"}) ||
		spec.Health.GetHttp().GetPort() != 8080 || spec.Health.GetHttp().GetPath() != "/healthz" {
		t.Errorf("checked flags not applied: %v", spec)
	}
}

// TestBadSpecFlagsAreUsageErrors: every bad value exits 2 before the
// daemon is asked anything, on create and on update alike.
func TestBadSpecFlagsAreUsageErrors(t *testing.T) {
	for _, bad := range [][]string{
		{"--update-parallelism", "-1"}, {"--update-parallelism", "x"},
		{"--update-delay", "-1s"}, {"--update-delay", "2h"}, {"--update-delay", "5"},
		{"--update-monitor", "-5s"}, {"--update-monitor", "1h1s"}, {"--update-monitor", "soon"},
		{"--update-order", "random"}, {"--update-order", "start_first"},
		{"--update-failure-action", "retry"}, {"--update-failure-action", ""},
		{"--update-max-failure-ratio", "1.5"}, {"--update-max-failure-ratio", "-0.1"},
		{"--update-max-failure-ratio", "NaN"}, {"--update-max-failure-ratio", "half"},
		{"--rollback-failure-action", "rollback"}, {"--rollback-order", "x"},
		{"--rollback-max-failure-ratio", "2"}, {"--rollback-delay", "-1s"}, {"--rollback-parallelism", "-2"},
		{"--limit-memory", "1X"}, {"--reserve-memory", "-5M"}, {"--limit-memory", "1e30"},
		{"--mount", "type=npipe,source=v,target=/d"}, {"--mount", "type=bind,source=/a,target=/b,foo=1"},
		{"--mount", "/a"}, {"--mount", "type=bind,source=/a,target=/b,readonly=maybe"},
		{"--mode", "x"}, {"--restart-condition", "always"}, {"--publish", "80"}, {"-p", "8080:99999"},
		{"--placement-pref", "zone"}, {"--health-http", "x/health"}, {"--health-http", "0"},
	} {
		for _, cmd := range [][]string{{"service", "create", "--name", "web", "img"}, {"service", "update", "web"}} {
			args := append(append([]string{"--data-dir", t.TempDir(), "--timeout", "2s"}, cmd...), bad...)
			var stdout, stderr bytes.Buffer
			if code := run(args, strings.NewReader(""), &stdout, &stderr); code != 2 || !strings.Contains(stderr.String(), "error: usage:") {
				t.Errorf("jaco %q: exit %d, stderr %q; want 2 and a usage error", args[4:], code, stderr.String())
			}
		}
	}
}

// TestMissingBundleIsAFailure: a bundle directory that cannot be read is
// a local file error (exit 1), not a usage mistake.
func TestMissingBundleIsAFailure(t *testing.T) {
	dir := t.TempDir()
	var stdout, stderr bytes.Buffer
	code := run([]string{"--data-dir", dir, "--timeout", "2s", "service", "create", "--name", "web", "--bundle", dir + "/nope"},
		strings.NewReader(""), &stdout, &stderr)
	if code != 1 || !strings.Contains(stderr.String(), "hook bundle") || strings.Contains(stderr.String(), "usage") {
		t.Errorf("exit %d, stderr %q; want 1 naming the hook bundle", code, stderr.String())
	}
}
