package containerd

import (
	"context"
	"fmt"
	"maps"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/containerd/containerd/v2/core/containers"
	"github.com/containerd/containerd/v2/pkg/oci"
	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/api/procopts"
)

// The process and container options of a service spec (docs/adr/0059),
// as Docker applies them. The manager checks them before they are
// written; each is read again here with api/procopts so a spec that got
// past an older manager fails Prepare with a clear error instead of
// making a container that does something else.

// prepareOptions refuses a spec whose options cannot work and readies on
// the node what they need: bind sources to make (prepareMounts) and the
// init binary. The hosts file is written at Start, once the replica's
// address is known (writeHosts); its path goes into the spec now.
func (c *controller) prepareOptions() (nodeFiles, error) {
	spec := c.rep.Task.GetSpec()
	var f nodeFiles
	// The options are made again with the container's spec; read here
	// first so a bad one refuses the replica before anything is made.
	if _, err := processOpts(spec); err != nil {
		return f, err
	}
	if _, err := containerOpts(spec, "check"); err != nil {
		return f, err
	}
	if _, err := resolvConfContent(spec, nil); err != nil {
		return f, err
	}
	var err error
	if f.volumeMounts, err = c.resolveVolumes(spec.GetMounts()); err != nil {
		return f, err
	}
	if err := prepareMounts(f.mountsOf(spec)); err != nil {
		return f, err
	}
	if s := spec.GetStopSignal(); s != "" {
		if _, err := procopts.Signal(s); err != nil {
			return f, fmt.Errorf("stop_signal: %w", err)
		}
	}
	if spec.GetInit() {
		p, err := c.rt.findInitBinary()
		if err != nil {
			return f, err
		}
		f.init = p
	}
	if len(spec.GetExtraHosts()) > 0 {
		if _, err := hostsContent("", "", spec.GetExtraHosts()); err != nil {
			return f, err
		}
		f.hosts = filepath.Join(c.rep.Dir, hostsFile)
	}
	return f, nil
}

// processOpts are the user, groups, working directory and ulimits. They
// come after the image's config (oci.WithImageConfig), which they
// override: the image's USER, its groups and WORKDIR.
func processOpts(spec *api.ServiceSpec) ([]oci.SpecOpts, error) {
	var opts []oci.SpecOpts
	if u := spec.GetUser(); u != "" {
		// Names are looked up in the image's /etc/passwd and /etc/group
		// (in the container's snapshot), a numeric uid missing there runs
		// with gid 0, as under Docker; the user's supplementary groups in
		// /etc/group come with it, as they do for the image's own USER
		// (oci.WithImageConfig), so naming that user changes nothing.
		name, _, _ := strings.Cut(u, ":")
		opts = append(opts, named("user "+u, oci.Compose(oci.WithUser(u), oci.WithAdditionalGIDs(name))))
	}
	if g := spec.GetGroups(); len(g) > 0 {
		opts = append(opts, named("groups "+strings.Join(g, ","), oci.WithAppendAdditionalGroups(g...)))
	}
	if wd := spec.GetWorkdir(); wd != "" {
		if !path.IsAbs(wd) {
			return nil, fmt.Errorf("workdir %q: not an absolute path", wd)
		}
		// runc makes a missing one (as root, mode 0755) before the
		// process starts, as Docker does.
		opts = append(opts, oci.WithProcessCwd(path.Clean(wd)))
	}
	for _, u := range spec.GetUlimits() {
		if err := procopts.CheckUlimit(u); err != nil {
			return nil, err
		}
		_, name, _ := procopts.Rlimit(u.GetName())
		// Replaces containerd's default of the same kind (nofile 1024).
		opts = append(opts, oci.WithRlimit(&specs.POSIXRlimit{Type: name,
			Soft: procopts.Value(u.GetSoft()), Hard: procopts.Value(u.GetHard())}))
	}
	return opts, nil
}

// containerOpts are the host name, capabilities, sysctls, read-only root
// and /dev/shm's size.
func containerOpts(spec *api.ServiceSpec, id string) ([]oci.SpecOpts, error) {
	opts := []oci.SpecOpts{oci.WithHostname(replicaHostname(spec, id))}
	if len(spec.GetCapAdd()) > 0 || len(spec.GetCapDrop()) > 0 {
		add, err := capNames(spec.GetCapAdd())
		if err != nil {
			return nil, fmt.Errorf("cap_add: %w", err)
		}
		drop, err := capNames(spec.GetCapDrop())
		if err != nil {
			return nil, fmt.Errorf("cap_drop: %w", err)
		}
		opts = append(opts, withCaps(add, drop))
	}
	if sc := spec.GetSysctls(); len(sc) > 0 {
		for _, name := range slices.Sorted(maps.Keys(sc)) {
			if err := procopts.CheckSysctl(name); err != nil {
				return nil, err
			}
		}
		opts = append(opts, func(_ context.Context, _ oci.Client, _ *containers.Container, s *oci.Spec) error {
			if s.Linux.Sysctl == nil {
				s.Linux.Sysctl = map[string]string{}
			}
			maps.Copy(s.Linux.Sysctl, sc)
			return nil
		})
	}
	if spec.GetReadOnly() {
		opts = append(opts, oci.WithRootFSReadonly())
	}
	if shm := spec.GetShmSizeBytes(); shm != 0 {
		if shm < 0 {
			return nil, fmt.Errorf("shm_size %d: want a size in bytes", shm)
		}
		opts = append(opts, withShmSize(shm))
	}
	return opts, nil
}

// capNames reads capability names as "CAP_NAME" (or procopts.All).
func capNames(in []string) ([]string, error) {
	out := make([]string, 0, len(in))
	for _, n := range in {
		c, err := procopts.Capability(n)
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, nil
}

// withCaps changes the default capability set as Docker does: ALL in
// cap_add is every capability but those dropped; else ALL in cap_drop
// leaves only those added; else the dropped go first, then the added
// join. The set is the bounding, permitted and effective one.
func withCaps(add, drop []string) oci.SpecOpts {
	return func(ctx context.Context, cl oci.Client, c *containers.Container, s *oci.Spec) error {
		var caps []string
		switch {
		case slices.Contains(add, procopts.All):
			for _, cp := range procopts.Capabilities() {
				if !slices.Contains(drop, cp) {
					caps = append(caps, cp)
				}
			}
		case slices.Contains(drop, procopts.All):
			caps = slices.Clone(add)
		default:
			var base []string
			if s.Process.Capabilities != nil {
				base = s.Process.Capabilities.Bounding
			}
			for _, cp := range base {
				if !slices.Contains(drop, cp) {
					caps = append(caps, cp)
				}
			}
			caps = append(caps, add...)
		}
		slices.Sort(caps)
		return oci.WithCapabilities(slices.Compact(caps))(ctx, cl, c, s)
	}
}

// withShmSize sets the size of the /dev/shm tmpfs (containerd's default
// spec makes it 64 MiB, Docker's default too) in bytes.
func withShmSize(size int64) oci.SpecOpts {
	return func(_ context.Context, _ oci.Client, _ *containers.Container, s *oci.Spec) error {
		for i, m := range s.Mounts {
			if path.Clean(m.Destination) != "/dev/shm" || m.Type != "tmpfs" {
				continue
			}
			opts := slices.DeleteFunc(slices.Clone(m.Options), func(o string) bool { return strings.HasPrefix(o, "size=") })
			s.Mounts[i].Options = append(opts, fmt.Sprintf("size=%d", size))
			return nil
		}
		return fmt.Errorf("shm_size: %w", oci.ErrNoShmMount)
	}
}

// named wraps opt's error with what it was applying: the spec's options
// run inside containerd's client, far from the field that failed.
func named(what string, opt oci.SpecOpts) oci.SpecOpts {
	return func(ctx context.Context, cl oci.Client, c *containers.Container, s *oci.Spec) error {
		if err := opt(ctx, cl, c, s); err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
		return nil
	}
}

// replicaHostname is the spec's host name or, as Docker names a
// container's, the first 12 characters of its container id: replicas on
// one node are told apart, and none takes the node's own name.
func replicaHostname(spec *api.ServiceSpec, id string) string {
	if h := spec.GetHostname(); h != "" {
		return h
	}
	return id[:min(len(id), 12)]
}
