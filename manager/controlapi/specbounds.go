package controlapi

import (
	"google.golang.org/grpc/codes"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/api/limits"
	"github.com/jaco-project/jaco/api/reason"
)

// specListLimits bounds the lists of a service spec. The encoded size is
// bounded already; these keep the work each list costs the leader small:
// every dependency and allow_from name is looked up and walked for cycles
// on each write, every constraint evaluated for every node the scheduler
// considers, every port and mount checked against every other.
var specListLimits = []struct {
	field string
	max   int
	count func(*api.ServiceSpec) int
}{
	{"depends_on", 32, func(s *api.ServiceSpec) int { return len(s.GetDependsOn()) }},
	{"network.allow_from", 64, func(s *api.ServiceSpec) int { return len(s.GetNetwork().GetAllowFrom()) }},
	{"placement.constraints", 32, func(s *api.ServiceSpec) int { return len(s.GetPlacement().GetConstraints()) }},
	{"ports", 64, func(s *api.ServiceSpec) int { return len(s.GetPorts()) }},
	{"mounts", 64, func(s *api.ServiceSpec) int { return len(s.GetMounts()) }},
	{"env", 1024, func(s *api.ServiceSpec) int { return len(s.GetEnv()) }},
	{"command", 1024, func(s *api.ServiceSpec) int { return len(s.GetCommand()) }},
	{"networks", limits.MaxServiceNetworks, func(s *api.ServiceSpec) int { return len(s.GetNetworks()) }},
	{"secrets", 64, func(s *api.ServiceSpec) int { return len(s.GetSecrets()) }},
	{"configs", 64, func(s *api.ServiceSpec) int { return len(s.GetConfigs()) }},
	{"groups", 32, func(s *api.ServiceSpec) int { return len(s.GetGroups()) }},
	{"ulimits", 16, func(s *api.ServiceSpec) int { return len(s.GetUlimits()) }},
	{"cap_add", 64, func(s *api.ServiceSpec) int { return len(s.GetCapAdd()) }},
	{"cap_drop", 64, func(s *api.ServiceSpec) int { return len(s.GetCapDrop()) }},
	{"sysctls", 64, func(s *api.ServiceSpec) int { return len(s.GetSysctls()) }},
	{"extra_hosts", 256, func(s *api.ServiceSpec) int { return len(s.GetExtraHosts()) }},
	// resolv.conf(5): glibc reads at most 3 nameservers and 6 search domains.
	{"dns", 3, func(s *api.ServiceSpec) int { return len(s.GetDns()) }},
	{"dns_search", 6, func(s *api.ServiceSpec) int { return len(s.GetDnsSearch()) }},
	{"dns_options", 16, func(s *api.ServiceSpec) int { return len(s.GetDnsOptions()) }},
}

// checkSpecLists refuses a spec with a list longer than its bound, naming
// the field and the bound.
func checkSpecLists(spec *api.ServiceSpec) error {
	for _, l := range specListLimits {
		if n := l.count(spec); n > l.max {
			return reason.Error(codes.ResourceExhausted, reason.LimitExceeded,
				"%s has %d entries; the limit is %d", l.field, n, l.max)
		}
	}
	seen := map[string]bool{}
	for _, d := range spec.GetDependsOn() {
		if seen[d] {
			return invalid("depends_on names %s twice", d)
		}
		seen[d] = true
	}
	clear(seen)
	for _, n := range spec.GetNetworks() {
		if seen[n] {
			return invalid("networks names %s twice", n)
		}
		if err := checkName("network", n); err != nil {
			return err
		}
		seen[n] = true
	}
	return nil
}
