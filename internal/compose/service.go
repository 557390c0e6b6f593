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
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/jaco-project/jaco/api"
)

// service maps one compose service. Values jaco cannot honour are
// refused by key (t.refuse); values that are plainly wrong are errors.
func (t *translator) service(s types.ServiceConfig) (*api.ServiceSpec, error) {
	key := "services." + s.Name
	if s.Image == "" {
		return nil, fmt.Errorf("%s: no image (jaco builds nothing: give image)", key)
	}
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
	t.volumes(key, s.Volumes, spec)
	if err := t.references(key, s, spec); err != nil {
		return nil, err
	}
	if err := health(key, s.HealthCheck, spec); err != nil {
		return nil, err
	}
	if err := restartFromService(key, s.Restart, spec); err != nil {
		return nil, err
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

func (t *translator) volumes(key string, vols []types.ServiceVolumeConfig, spec *api.ServiceSpec) {
	for _, v := range vols {
		if v.Type != types.VolumeTypeBind {
			t.refuse(key+".volumes", "type "+v.Type+"; only bind mounts")
			continue
		}
		if b := v.Bind; b != nil && (b.SELinux != "" || b.Propagation != "" || b.Recursive != "") {
			t.refuse(key+".volumes.bind", "selinux, propagation and recursive options")
			continue
		}
		spec.Mounts = append(spec.Mounts, &api.Mount{Source: v.Source, Target: v.Target, Readonly: v.ReadOnly})
	}
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
			ref.Mode = 0o400 // the manager's default, written out so a redeploy compares equal
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
