package compose

import (
	"fmt"
	"maps"
	"net/netip"
	"path"
	"slices"

	"github.com/compose-spec/compose-go/v2/types"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/api/procopts"
)

// process maps the process and container options (user, working_dir,
// hostname, capabilities, sysctls, ulimits, stop_signal, init, read_only,
// extra_hosts, dns*, shm_size, group_add) to the spec's fields of the same
// meaning (docs/adr/0059-process-and-container-options.md). Words are read
// with api/procopts, as the manager and the runtimes read them, so a
// mistake is named by its key here rather than as an invalid spec after
// the networks and secrets were created. Lists and maps come out sorted
// where compose holds them unordered, so a redeploy compares equal.
func process(key string, s types.ServiceConfig, spec *api.ServiceSpec) error {
	spec.User = s.User
	spec.Groups = s.GroupAdd
	if w := s.WorkingDir; w != "" && (!path.IsAbs(w) || path.Clean(w) != w) {
		return fmt.Errorf("%s.working_dir: %q: want a clean absolute path", key, w)
	}
	spec.Workdir = s.WorkingDir
	spec.Hostname = s.Hostname
	var err error
	if spec.CapAdd, err = capabilities(key+".cap_add", s.CapAdd); err != nil {
		return err
	}
	if spec.CapDrop, err = capabilities(key+".cap_drop", s.CapDrop); err != nil {
		return err
	}
	if len(s.Sysctls) > 0 {
		spec.Sysctls = map[string]string{}
		for k, v := range s.Sysctls {
			if err := procopts.CheckSysctl(k); err != nil {
				return fmt.Errorf("%s.sysctls: %w", key, err)
			}
			if v == "" {
				return fmt.Errorf("%s.sysctls.%s: no value", key, k)
			}
			spec.Sysctls[k] = v
		}
	}
	if spec.Ulimits, err = ulimits(key+".ulimits", s.Ulimits); err != nil {
		return err
	}
	if sig := s.StopSignal; sig != "" {
		if _, err := procopts.Signal(sig); err != nil {
			return fmt.Errorf("%s.stop_signal: %w", key, err)
		}
		spec.StopSignal = sig
	}
	spec.Init = s.Init != nil && *s.Init
	spec.ReadOnly = s.ReadOnly
	if spec.ExtraHosts, err = extraHosts(key+".extra_hosts", s.ExtraHosts); err != nil {
		return err
	}
	for _, ns := range s.DNS {
		if _, err := netip.ParseAddr(ns); err != nil {
			return fmt.Errorf("%s.dns: %q: want a nameserver's IP address", key, ns)
		}
	}
	// The resolver reads no more; the manager refuses more
	// (docs/adr/0059-process-and-container-options.md).
	if len(s.DNS) > 3 {
		return fmt.Errorf("%s.dns: %d nameservers: at most 3, the resolver reads no more", key, len(s.DNS))
	}
	if len(s.DNSSearch) > 6 {
		return fmt.Errorf("%s.dns_search: %d domains: at most 6, the resolver reads no more", key, len(s.DNSSearch))
	}
	spec.Dns = s.DNS
	spec.DnsSearch = s.DNSSearch
	spec.DnsOptions = s.DNSOpts
	if s.ShmSize < 0 {
		return fmt.Errorf("%s.shm_size: %d is negative", key, s.ShmSize)
	}
	spec.ShmSizeBytes = int64(s.ShmSize)
	return nil
}

// capabilities spells each capability as procopts does ("CAP_NET_ADMIN",
// "ALL"), as `service create --cap-add` writes it.
func capabilities(key string, names []string) ([]string, error) {
	var out []string
	for _, n := range names {
		c, err := procopts.Capability(n)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", key, err)
		}
		out = append(out, c)
	}
	return out, nil
}

// ulimits maps compose's ulimits, `nofile: 1024` (soft and hard) or
// `nofile: {soft: 1024, hard: 2048}`, sorted by name.
func ulimits(key string, m map[string]*types.UlimitsConfig) ([]*api.Ulimit, error) {
	var out []*api.Ulimit
	for _, name := range slices.Sorted(maps.Keys(m)) {
		c := m[name]
		u := &api.Ulimit{Name: name, Soft: int64(c.Soft), Hard: int64(c.Hard)}
		if c.Single != 0 {
			u.Soft, u.Hard = int64(c.Single), int64(c.Single)
		}
		if err := procopts.CheckUlimit(u); err != nil {
			return nil, fmt.Errorf("%s: %w", key, err)
		}
		out = append(out, u)
	}
	return out, nil
}

// extraHosts renders compose's host list as "HOST:IP" lines (Docker's
// order), sorted by host, each host's addresses in the file's order.
func extraHosts(key string, h types.HostsList) ([]string, error) {
	var out []string
	for _, host := range slices.Sorted(maps.Keys(h)) {
		for _, ip := range h[host] {
			line := host + ":" + ip
			if _, _, err := procopts.ExtraHost(line); err != nil {
				return nil, fmt.Errorf("%s: %w", key, err)
			}
			out = append(out, line)
		}
	}
	return out, nil
}

// clusterless are the service keys that mean nothing in a cluster, and
// why: accepted with a warning, as docker stack deploy does.
var clusterless = []struct {
	key string
	set func(types.ServiceConfig) bool
	why string
}{
	{"container_name", func(s types.ServiceConfig) bool { return s.ContainerName != "" },
		"ignored; jaco names each replica itself"},
	{"expose", func(s types.ServiceConfig) bool { return len(s.Expose) > 0 },
		"ignored; jaco filters no ports: who may connect is the service's network access"},
	{"links", func(s types.ServiceConfig) bool { return len(s.Links) > 0 },
		"ignored; a service is reached by its jaco name (STACK_SERVICE) on a network both are on"},
}

func (t *translator) ignoreClusterless(s types.ServiceConfig) {
	for _, c := range clusterless {
		if c.set(s) {
			t.ignore(c.key, s.Name, c.why)
		}
	}
}
