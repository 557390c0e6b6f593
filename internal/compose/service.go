package compose

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/compose-spec/compose-go/v2/types"
	units "github.com/docker/go-units"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/jaco-project/jaco/api"
)

// service maps one compose service. Values jaco cannot honour are
// refused by key (t.refuse); values that are plainly wrong are errors.
func (t *translator) service(s types.ServiceConfig) (*api.ServiceSpec, error) {
	key := "services." + s.Name
	switch {
	case s.Build != nil && s.Image == "":
		t.refuse(key+".build", "no image: jaco builds nothing; build the image, push it to a registry "+
			"(or jaco image load it on every node) and give image")
	case s.Build != nil:
		t.ignore("build", s.Name, "ignored; jaco builds nothing and runs the image given")
	}
	t.ignoreClusterless(s)
	spec := &api.ServiceSpec{
		Name:       Name(t.stack, s.Name),
		Image:      s.Image,
		Command:    []string(s.Command),
		Entrypoint: []string(s.Entrypoint),
		Env:        environment(s.Environment),
		Replicas:   1,
		Labels:     map[string]string{},
	}
	for k, v := range s.Labels {
		spec.Labels[k] = v
	}
	if s.StopGracePeriod != nil {
		spec.StopGracePeriod = durationpb.New(time.Duration(*s.StopGracePeriod))
	}
	for _, dep := range slices.Sorted(maps.Keys(s.DependsOn)) {
		switch c := s.DependsOn[dep].Condition; c {
		case "", types.ServiceConditionStarted, types.ServiceConditionHealthy:
			// jaco waits for a healthy running replica either way: a
			// dependency without a health check is healthy once running.
		default:
			t.refuse(key+".depends_on."+dep+".condition", c)
		}
		if !s.DependsOn[dep].Required {
			t.refuse(key+".depends_on."+dep+".required", "false; jaco always waits")
		}
		spec.DependsOn = append(spec.DependsOn, Name(t.stack, dep))
	}
	for _, n := range slices.Sorted(maps.Keys(s.Networks)) {
		if c := s.Networks[n]; c != nil && (len(c.Aliases) > 0 || c.Ipv4Address != "" || c.Priority != 0) {
			t.refuse(key+".networks."+n, "aliases, addresses and priorities")
		}
		spec.Networks = append(spec.Networks, t.networkName(n))
	}
	if err := t.ports(key, s.Ports, spec); err != nil {
		return nil, err
	}
	if err := t.volumes(key, s.Volumes, spec); err != nil {
		return nil, err
	}
	if err := t.tmpfs(key, s.Tmpfs, spec); err != nil {
		return nil, err
	}
	if err := process(key, s, spec); err != nil {
		return nil, err
	}
	if err := t.references(key, s, spec); err != nil {
		return nil, err
	}
	if err := health(key, s.HealthCheck, spec); err != nil {
		return nil, err
	}
	if err := restartFromService(key, s.Restart, spec); err != nil {
		return nil, err
	}
	if s.Restart != "" {
		// As docker stack deploy: restart is what a service without
		// deploy.restart_policy restarts by; beside one it is dropped.
		if s.Deploy != nil && s.Deploy.RestartPolicy != nil {
			t.ignore("restart", s.Name, "ignored; deploy.restart_policy is followed")
		} else {
			t.ignore("restart", s.Name, "read as deploy.restart_policy (no: none; always, unless-stopped: any; on-failure[:N]: on-failure, N attempts)")
		}
	}
	if s.Deploy != nil {
		if err := t.deploy(key+".deploy", s.Deploy, spec); err != nil {
			return nil, err
		}
	}
	spec.Labels[NamespaceLabel] = t.stack
	return spec, nil
}

// environment renders the resolved environment (env_file merged in by
// compose-go) as sorted KEY=VALUE; a variable left without a value is
// left out, as docker does.
func environment(m types.MappingWithEquals) []string {
	var env []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		if v := m[k]; v != nil {
			env = append(env, k+"="+*v)
		}
	}
	return env
}

func (t *translator) ports(key string, ports []types.ServicePortConfig, spec *api.ServiceSpec) error {
	for _, p := range ports {
		pc := &api.PortConfig{TargetPort: p.Target, Protocol: p.Protocol}
		switch p.Mode {
		case "", "ingress":
			pc.PublishMode = api.PublishMode_PUBLISH_MODE_INGRESS
		case "host":
			pc.PublishMode = api.PublishMode_PUBLISH_MODE_HOST
		default:
			return fmt.Errorf("%s.ports: mode %q: want ingress or host", key, p.Mode)
		}
		switch p.Protocol {
		case "", "tcp", "udp":
		default:
			t.refuse(key+".ports.protocol", p.Protocol)
		}
		if p.Published == "" {
			t.refuse(key+".ports", fmt.Sprintf("%d without a published port", p.Target))
			continue
		}
		n, err := strconv.ParseUint(p.Published, 10, 16)
		if err != nil {
			t.refuse(key+".ports.published", p.Published)
			continue
		}
		pc.PublishedPort = uint32(n)
		spec.Ports = append(spec.Ports, pc)
	}
	return nil
}

// volumes maps bind, tmpfs and volume mounts (named and anonymous
// volumes: volumes.go); other types are refused. A bind's type is left
// unspecified (the proto's bind), as before tmpfs existed, so a stack
// deployed by an older jaco compares equal. create_host_path is
// compose-go's: true for the short syntax, as docker compose reads it,
// false unless given for the long one.
func (t *translator) volumes(key string, vols []types.ServiceVolumeConfig, spec *api.ServiceSpec) error {
	for _, v := range vols {
		switch v.Type {
		case types.VolumeTypeBind:
			b := v.Bind
			if b != nil && (b.SELinux != "" || b.Propagation != "" || b.Recursive != "") {
				t.refuse(key+".volumes.bind", "selinux, propagation and recursive options")
				continue
			}
			spec.Mounts = append(spec.Mounts, &api.Mount{Source: v.Source, Target: v.Target, Readonly: v.ReadOnly,
				CreateHostPath: b != nil && bool(b.CreateHostPath)})
		case types.VolumeTypeTmpfs:
			if v.Source != "" {
				return fmt.Errorf("%s.volumes: tmpfs at %s: a tmpfs has no source (got %q)", key, v.Target, v.Source)
			}
			m := &api.Mount{Type: api.MountType_MOUNT_TYPE_TMPFS, Target: v.Target, Readonly: v.ReadOnly}
			if tm := v.Tmpfs; tm != nil {
				// The mode is the number compose-go read, as docker
				// compose takes it: 0o1777 (or 01777) is octal, while a
				// plain 1777 is the decimal number (0o3361). The literal
				// is gone by now, so that mistake cannot be told apart.
				if tm.Mode > maxTmpfsMode {
					return fmt.Errorf("%s.volumes.tmpfs.mode: %#o (%d): want permission bits, at most 0o7777; write octal as 0o1777", key, tm.Mode, tm.Mode)
				}
				m.TmpfsSizeBytes, m.TmpfsMode = int64(tm.Size), tm.Mode
			}
			spec.Mounts = append(spec.Mounts, m)
		case types.VolumeTypeVolume:
			spec.Mounts = append(spec.Mounts, t.volumeMount(v))
		default:
			t.refuse(key+".volumes", "type "+v.Type+"; only bind, tmpfs and volume mounts")
		}
	}
	return nil
}

// maxTmpfsMode is the most a tmpfs root's mode holds: permission bits
// with setuid, setgid and sticky.
const maxTmpfsMode = 0o7777

// tmpfs maps the service-level tmpfs key, each PATH[:OPTIONS] as docker
// run --tmpfs reads it: size= (a size such as 64m) and mode= (octal) are
// carried; rw is the default; ro makes it read-only. The other mount
// options (noexec, nosuid, uid, ...) have no place in the spec and are
// refused by name rather than dropped.
func (t *translator) tmpfs(key string, list types.StringList, spec *api.ServiceSpec) error {
	for _, entry := range list {
		target, opts, _ := strings.Cut(entry, ":")
		if target == "" {
			return fmt.Errorf("%s.tmpfs: %q: want PATH[:size=64m,mode=1777]", key, entry)
		}
		m := &api.Mount{Type: api.MountType_MOUNT_TYPE_TMPFS, Target: target}
		for _, o := range strings.Split(opts, ",") {
			k, v, _ := strings.Cut(o, "=")
			switch k {
			case "", "rw":
			case "ro":
				m.Readonly = true
			case "size":
				n, err := units.RAMInBytes(v)
				if err != nil || n < 0 {
					return fmt.Errorf("%s.tmpfs: %q: size %q: want a size such as 64m", key, entry, v)
				}
				m.TmpfsSizeBytes = n
			case "mode":
				mode, err := strconv.ParseUint(v, 8, 32)
				if err != nil || mode > maxTmpfsMode {
					return fmt.Errorf("%s.tmpfs: %q: mode %q: want octal permission bits such as 1777", key, entry, v)
				}
				m.TmpfsMode = uint32(mode)
			default:
				t.refuse(key+".tmpfs", "option "+k+"; only size, mode, ro and rw")
			}
		}
		spec.Mounts = append(spec.Mounts, m)
	}
	return nil
}

// references maps the service's secrets and configs to FileReferences by
// the jaco names of what they name. Compose's default targets are kept:
// /run/secrets/SOURCE for a secret (jaco: the file name SOURCE), /SOURCE
// for a config.
func (t *translator) references(key string, s types.ServiceConfig, spec *api.ServiceSpec) error {
	secrets, configs := secretObjects(t.p.Secrets), configObjects(t.p.Configs)
	for _, r := range s.Secrets {
		ref, err := fileReference(key+".secrets", types.FileReferenceConfig(r), t.fileName(secrets, r.Source))
		if err != nil {
			return err
		}
		if ref.Target == "" {
			ref.Target = r.Source
		}
		if ref.Mode == 0 {
			ref.Mode = 0o444 // the manager's default (Docker's), written out so a redeploy compares equal
		}
		ref.Target = strings.TrimPrefix(ref.Target, "/run/secrets/")
		spec.Secrets = append(spec.Secrets, ref)
	}
	for _, r := range s.Configs {
		ref, err := fileReference(key+".configs", types.FileReferenceConfig(r), t.fileName(configs, r.Source))
		if err != nil {
			return err
		}
		if ref.Target == "" {
			ref.Target = "/" + r.Source
		}
		if ref.Mode == 0 {
			ref.Mode = 0o444
		}
		spec.Configs = append(spec.Configs, ref)
	}
	return nil
}

func fileReference(key string, r types.FileReferenceConfig, name string) (*api.FileReference, error) {
	ref := &api.FileReference{Name: name, Target: r.Target}
	for _, id := range []struct {
		text string
		to   *uint32
		what string
	}{{r.UID, &ref.Uid, "uid"}, {r.GID, &ref.Gid, "gid"}} {
		if id.text == "" {
			continue
		}
		n, err := strconv.ParseUint(id.text, 10, 32)
		if err != nil {
			return nil, fmt.Errorf("%s: %s %q: want a number", key, id.what, id.text)
		}
		*id.to = uint32(n)
	}
	if r.Mode != nil {
		ref.Mode = uint32(*r.Mode)
	}
	return ref, nil
}

// health maps a healthcheck: CMD argv runs as given, CMD-SHELL (and a
// plain string) under /bin/sh -c; NONE and disable: true are no check.
func health(key string, h *types.HealthCheckConfig, spec *api.ServiceSpec) error {
	if h == nil || h.Disable || len(h.Test) == 0 {
		return nil
	}
	var argv []string
	switch h.Test[0] {
	case "NONE":
		return nil
	case "CMD":
		argv = h.Test[1:]
	case "CMD-SHELL":
		argv = []string{"/bin/sh", "-c", strings.Join(h.Test[1:], " ")}
	default:
		return fmt.Errorf("%s.healthcheck.test: want [CMD, ...], [CMD-SHELL, ...] or NONE, not %q", key, h.Test[0])
	}
	if len(argv) == 0 {
		return fmt.Errorf("%s.healthcheck.test: no command", key)
	}
	hc := &api.HealthCheck{Test: &api.HealthCheck_Command{Command: &api.CommandCheck{Argv: argv}}}
	if h.Interval != nil {
		hc.Interval = durationpb.New(time.Duration(*h.Interval))
	}
	if h.Timeout != nil {
		hc.Timeout = durationpb.New(time.Duration(*h.Timeout))
	}
	if h.StartPeriod != nil {
		hc.StartPeriod = durationpb.New(time.Duration(*h.StartPeriod))
	}
	if h.Retries != nil {
		if *h.Retries > math.MaxUint32 {
			return fmt.Errorf("%s.healthcheck.retries: %d is too many", key, *h.Retries)
		}
		hc.Retries = uint32(*h.Retries)
	}
	spec.Health = hc
	return nil
}

// restartFromService maps compose's (non-Swarm) restart key; a
// deploy.restart_policy, when given, overrides it.
func restartFromService(key, restart string, spec *api.ServiceSpec) error {
	var c api.RestartCondition
	switch restart {
	case "":
		return nil
	case "always", "unless-stopped":
		c = api.RestartCondition_RESTART_CONDITION_ANY
	case "no":
		c = api.RestartCondition_RESTART_CONDITION_NONE
	default:
		if restart != "on-failure" && !strings.HasPrefix(restart, "on-failure:") {
			return fmt.Errorf("%s.restart: %q: want no, always, on-failure[:N] or unless-stopped", key, restart)
		}
		c = api.RestartCondition_RESTART_CONDITION_ON_FAILURE
		if n, ok := strings.CutPrefix(restart, "on-failure:"); ok {
			max, err := strconv.ParseUint(n, 10, 64)
			if err != nil {
				return fmt.Errorf("%s.restart: %q: want on-failure:N", key, restart)
			}
			spec.Restart = &api.RestartPolicy{Condition: c, MaxAttempts: max}
			return nil
		}
	}
	spec.Restart = &api.RestartPolicy{Condition: c}
	return nil
}
