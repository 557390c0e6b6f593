package controlapi

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/api/reason"
	"github.com/jaco-project/jaco/manager/state/store"
)

// Every list of a spec is bounded: beyond it a create is refused
// limit_exceeded naming the field and the bound, and nothing is made.
func TestSpecListBounds(t *testing.T) {
	s, st := newServiceServer(t)
	names := func(n int) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = fmt.Sprintf("s%d", i)
		}
		return out
	}
	for _, l := range specListLimits {
		spec := imageSpec("x")
		switch l.field {
		case "depends_on":
			spec.DependsOn = names(l.max + 1)
		case "network.allow_from":
			spec.Network = &api.NetworkAccess{AllowFrom: names(l.max + 1)}
		case "placement.constraints":
			spec.Placement = &api.Placement{Constraints: names(l.max + 1)}
		case "ports":
			for i := range l.max + 1 {
				spec.Ports = append(spec.Ports, &api.PortConfig{TargetPort: uint32(1000 + i)})
			}
		case "mounts":
			for i := range l.max + 1 {
				spec.Mounts = append(spec.Mounts, &api.Mount{Source: "/s", Target: fmt.Sprintf("/t%d", i)})
			}
		case "env":
			for i := range l.max + 1 {
				spec.Env = append(spec.Env, fmt.Sprintf("K%d=v", i))
			}
		case "command":
			spec.Command = names(l.max + 1)
		case "networks":
			spec.Networks = names(l.max + 1)
		case "secrets":
			for _, n := range names(l.max + 1) {
				spec.Secrets = append(spec.Secrets, &api.FileReference{Name: n})
			}
		case "configs":
			for _, n := range names(l.max + 1) {
				spec.Configs = append(spec.Configs, &api.FileReference{Name: n})
			}
		case "groups":
			spec.Groups = names(l.max + 1)
		case "ulimits":
			for range l.max + 1 {
				spec.Ulimits = append(spec.Ulimits, &api.Ulimit{Name: "nofile"})
			}
		case "cap_add":
			spec.CapAdd = names(l.max + 1)
		case "cap_drop":
			spec.CapDrop = names(l.max + 1)
		case "sysctls":
			spec.Sysctls = map[string]string{}
			for _, n := range names(l.max + 1) {
				spec.Sysctls["net."+n] = "1"
			}
		case "extra_hosts":
			spec.ExtraHosts = names(l.max + 1)
		case "dns":
			spec.Dns = names(l.max + 1)
		case "dns_search":
			spec.DnsSearch = names(l.max + 1)
		case "dns_options":
			spec.DnsOptions = names(l.max + 1)
		default:
			t.Fatalf("no case for %s", l.field)
		}
		_, err := s.CreateService(context.Background(), &api.CreateServiceRequest{Spec: spec})
		if reason.Of(err) != reason.LimitExceeded || !strings.Contains(err.Error(), l.field) || !strings.Contains(err.Error(), fmt.Sprint(l.max)) {
			t.Errorf("%s with %d entries: %v, want limit_exceeded naming the field and %d", l.field, l.max+1, err, l.max)
		}
	}
	spec := imageSpec("x")
	spec.DependsOn = []string{"db", "db"}
	if _, err := s.CreateService(context.Background(), &api.CreateServiceRequest{Spec: spec}); reason.Of(err) != reason.InvalidSpec {
		t.Errorf("a dependency named twice: %v, want invalid_spec", err)
	}
	var n int
	st.View(func(tx store.ReadTx) { n = len(tx.ListServices()) })
	if got := n; got != 0 {
		t.Errorf("%d services after the refusals, want 0", got)
	}
}
