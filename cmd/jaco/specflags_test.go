package main

import (
	"testing"

	"github.com/spf13/cobra"

	"github.com/jaco-project/jaco/api"
)

func TestParsePublish(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want *api.PortConfig
	}{
		{"8080:80", &api.PortConfig{PublishedPort: 8080, TargetPort: 80}},
		{"53:53/udp", &api.PortConfig{Protocol: "udp", PublishedPort: 53, TargetPort: 53}},
		{"80", nil},
		{"x:80", nil},
		{"70000:80", nil},
	} {
		got, err := parsePublish(tc.in)
		if tc.want == nil {
			if err == nil {
				t.Errorf("parsePublish(%q) = %v, want an error", tc.in, got)
			}
			continue
		}
		if err != nil || got.PublishedPort != tc.want.PublishedPort || got.TargetPort != tc.want.TargetPort || got.Protocol != tc.want.Protocol {
			t.Errorf("parsePublish(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
}

func TestParseBytes(t *testing.T) {
	for in, want := range map[string]int64{"512": 512, "64K": 64 << 10, "64m": 64 << 20, "1G": 1 << 30} {
		if got, err := parseBytes(in); err != nil || got != want {
			t.Errorf("parseBytes(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "-1", "1T", "M"} {
		if _, err := parseBytes(in); err == nil {
			t.Errorf("parseBytes(%q) accepted", in)
		}
	}
}

// TestUpdateAppliesOnlyGivenFlags: `service update` must not reset what
// the operator did not mention to the flags' defaults.
func TestUpdateAppliesOnlyGivenFlags(t *testing.T) {
	var f specFlags
	cmd := &cobra.Command{}
	f.register(cmd.Flags())
	if err := cmd.Flags().Parse([]string{"--replicas", "7", "--constraint", "node.labels.zone==a"}); err != nil {
		t.Fatal(err)
	}
	spec := &api.ServiceSpec{Name: "web", Image: "img", Replicas: 3, Env: []string{"A=1"},
		Restart: &api.RestartPolicy{Condition: api.RestartCondition_RESTART_CONDITION_NONE}}
	if err := f.apply(cmd, spec, false); err != nil {
		t.Fatal(err)
	}
	if spec.Replicas != 7 || len(spec.Placement.GetConstraints()) != 1 {
		t.Fatalf("given flags not applied: %v", spec)
	}
	if len(spec.Env) != 1 || spec.Restart.Condition != api.RestartCondition_RESTART_CONDITION_NONE || spec.StopGracePeriod != nil || spec.Health != nil {
		t.Fatalf("flags not given changed the spec: %v", spec)
	}
}
