package controlapi

import (
	"net/netip"
	"path"
	"regexp"
	"strings"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/api/procopts"
	"github.com/jaco-project/jaco/api/spectemplate"
)

var (
	// userOrGroup is a user or group name or numeric id, as useradd(8)
	// and Docker accept them.
	userOrGroup = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_.-]{0,31}\$?$`)
	// hostName is a host name: dot-separated labels of letters, digits
	// and '-', at most 64 bytes (the kernel's HOST_NAME_MAX).
	hostName = regexp.MustCompile(`^[A-Za-z0-9]([A-Za-z0-9-]{0,62}[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]{0,62}[A-Za-z0-9])?)*$`)
	// dnsWord is a search domain or a resolver option (ndots:2, rotate).
	dnsWord = regexp.MustCompile(`^[A-Za-z0-9_.:-]{1,253}$`)
)

// validateProcess checks the process and container options of a spec
// (docs/adr/0059): each word is one the runtimes read the same way
// (api/procopts), and a hook bundle, which runs on the node's own file
// system and host name, carries none of the container-only ones.
func validateProcess(spec *api.ServiceSpec) error {
	if spec.Bundle != nil {
		if set := procopts.ContainerOnly(spec); len(set) > 0 {
			return invalid("service %s is a hook bundle: %s apply to containers only", spec.Name, strings.Join(set, ", "))
		}
	}
	if u := spec.User; u != "" {
		user, group, hasGroup := strings.Cut(u, ":")
		if !userOrGroup.MatchString(user) || (hasGroup && !userOrGroup.MatchString(group)) {
			return invalid("user %q: want USER or USER:GROUP, names or numeric ids", u)
		}
	}
	for _, g := range spec.Groups {
		if !userOrGroup.MatchString(g) {
			return invalid("group %q: want a group name or numeric id", g)
		}
	}
	if w := spec.Workdir; w != "" && (!path.IsAbs(w) || path.Clean(w) != w) {
		return invalid("workdir %q: want a clean absolute path", w)
	}
	if s := spec.StopSignal; s != "" {
		if _, err := procopts.Signal(s); err != nil {
			return invalid("stop_signal: %v", err)
		}
	}
	ulimits := map[string]bool{}
	for _, u := range spec.Ulimits {
		if err := procopts.CheckUlimit(u); err != nil {
			return invalid("%v", err)
		}
		if ulimits[u.Name] {
			return invalid("ulimit %s is set twice", u.Name)
		}
		ulimits[u.Name] = true
	}
	// A template is checked as a template; what it expands to is the
	// agent's to use.
	if h := spec.Hostname; h != "" && !spectemplate.Templated(h) && (len(h) > 64 || !hostName.MatchString(h)) {
		return invalid("hostname %q: want letters, digits, '-' and '.', at most 64 characters", h)
	}
	for _, caps := range [][]string{spec.CapAdd, spec.CapDrop} {
		for _, c := range caps {
			if _, err := procopts.Capability(c); err != nil {
				return invalid("%v", err)
			}
		}
	}
	for k, v := range spec.Sysctls {
		if err := procopts.CheckSysctl(k); err != nil {
			return invalid("%v", err)
		}
		if v == "" || strings.ContainsAny(v, "\n\x00") {
			return invalid("sysctl %s: value %q: want a non-empty single line", k, v)
		}
	}
	for _, h := range spec.ExtraHosts {
		if _, _, err := procopts.ExtraHost(h); err != nil {
			return invalid("%v", err)
		}
	}
	for _, ns := range spec.Dns {
		if _, err := netip.ParseAddr(ns); err != nil {
			return invalid("dns %q: want a nameserver's IP address", ns)
		}
	}
	for _, words := range []struct {
		field string
		list  []string
	}{{"dns_search", spec.DnsSearch}, {"dns_options", spec.DnsOptions}} {
		for _, w := range words.list {
			if !dnsWord.MatchString(w) {
				return invalid("%s %q: want one word of letters, digits, '.', '_', ':' or '-'", words.field, w)
			}
		}
	}
	if spec.ShmSizeBytes < 0 {
		return invalid("shm_size %d cannot be negative", spec.ShmSizeBytes)
	}
	return nil
}

// validateMounts checks each mount alone and that no two share a target:
// a bind needs absolute paths, a tmpfs no source, a volume a volume name
// or none; the tmpfs settings are a tmpfs's only, create_host_path a
// bind's, the volume options a volume's.
func validateMounts(spec *api.ServiceSpec) error {
	targets := map[string]bool{}
	for _, m := range spec.Mounts {
		if !path.IsAbs(m.Target) {
			return invalid("mount target %q must be an absolute path", m.Target)
		}
		if m.Target == "/" {
			return invalid("a mount cannot replace the root file system (target /)")
		}
		if err := validateVolumeMount(spec, m); err != nil {
			return err
		}
		switch m.Type {
		case api.MountType_MOUNT_TYPE_UNSPECIFIED, api.MountType_MOUNT_TYPE_BIND:
			if !path.IsAbs(m.Source) {
				return invalid("bind mount %s:%s: the source must be an absolute path on the node", m.Source, m.Target)
			}
			if m.TmpfsSizeBytes != 0 || m.TmpfsMode != 0 {
				return invalid("bind mount %s:%s: tmpfs size and mode are a tmpfs mount's", m.Source, m.Target)
			}
		case api.MountType_MOUNT_TYPE_TMPFS:
			if m.Source != "" {
				return invalid("tmpfs mount at %s: a tmpfs has no source (got %q)", m.Target, m.Source)
			}
			if m.CreateHostPath {
				return invalid("tmpfs mount at %s: create_host_path is a bind mount's", m.Target)
			}
			if m.TmpfsSizeBytes < 0 {
				return invalid("tmpfs mount at %s: size %d cannot be negative", m.Target, m.TmpfsSizeBytes)
			}
			if m.TmpfsMode&^0o7777 != 0 {
				return invalid("tmpfs mount at %s: mode %#o: want permission bits (at most 07777)", m.Target, m.TmpfsMode)
			}
		case api.MountType_MOUNT_TYPE_VOLUME: // validateVolumeMount
		default:
			return invalid("mount at %s: type %d: want bind, tmpfs or volume", m.Target, m.Type)
		}
		t := path.Clean(m.Target)
		if targets[t] {
			return invalid("two mounts target %s", t)
		}
		targets[t] = true
	}
	return nil
}
