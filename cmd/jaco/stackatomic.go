package main

import (
	"context"
	"fmt"
	"slices"

	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/api/reason"
	"github.com/jaco-project/jaco/internal/compose"
)

// maxDeployBytes bounds one DeployStack request: gRPC refuses a message
// over 4 MiB, on the way to the manager and again on a follower's way to
// the leader; the margin is for the forwarded call's framing. A stack
// over it names its largest files, which can be created first and given
// as external (docs/adr/0062-atomic-stack-deploy.md).
const maxDeployBytes = 4<<20 - 64<<10

// plan is the one request that makes the cluster hold the stack
// (docs/adr/0062-atomic-stack-deploy.md): the networks, secrets, configs
// and volumes missing from p; each new service, and each existing one
// whose spec differs from the file's (with the version it was read at),
// dependencies first; with --prune, the stack's services the files no
// longer have, dependents first.
func (d *deployer) plan(p present, existing []*api.Service) *api.DeployStackRequest {
	labels := map[string]string{compose.NamespaceLabel: d.st.Name}
	req := &api.DeployStackRequest{Stack: d.st.Name}
	for _, n := range d.st.Networks {
		if !n.External && p.networks[n.Name] == nil {
			req.Networks = append(req.Networks, &api.NetworkSpec{Name: n.Name, Subnet: n.Subnet, Labels: labels})
		}
	}
	for _, f := range d.st.Secrets {
		if !f.External && !p.secrets[f.Name] {
			req.Secrets = append(req.Secrets, &api.FileSpec{Name: f.Name, Data: d.data[f.Name], Labels: labels})
		}
	}
	for _, f := range d.st.Configs {
		if !f.External && !p.configs[f.Name] {
			req.Configs = append(req.Configs, &api.FileSpec{Name: f.Name, Data: d.data[f.Name], Labels: labels})
		}
	}
	req.Volumes = d.volumeSpecs(p.volumes)
	byName := map[string]*api.Service{}
	for _, s := range existing {
		byName[s.Spec.Name] = s
	}
	for _, spec := range dependencyOrder(d.st.Services) {
		stored := byName[spec.Name]
		switch {
		case stored == nil:
			req.Services = append(req.Services, &api.StackService{Spec: spec})
		case !sameSpec(stored.Spec, spec):
			desired := proto.CloneOf(spec)
			desired.ForceUpdate = stored.Spec.GetForceUpdate()
			req.Services = append(req.Services, &api.StackService{Spec: desired, Version: stored.Meta.GetVersion()})
		}
	}
	if d.prune {
		var gone []*api.Service
		for _, s := range existing {
			if s.Spec.GetLabels()[compose.NamespaceLabel] == d.st.Name &&
				!slices.ContainsFunc(d.st.Services, func(w *api.ServiceSpec) bool { return w.Name == s.Spec.Name }) {
				gone = append(gone, s)
			}
		}
		for _, s := range removalOrder(gone) {
			req.Remove = append(req.Remove, &api.StackRemoval{Service: s.Id, Version: s.Meta.GetVersion()})
		}
	}
	return req
}

// empty: the request would change nothing.
func empty(req *api.DeployStackRequest) bool {
	return len(req.Networks)+len(req.Secrets)+len(req.Configs)+len(req.Volumes)+len(req.Services)+len(req.Remove) == 0
}

// deploy sends req, which the manager applies whole or not at all, says
// what it created, updated and removed, and returns the services to wait
// for.
func (d *deployer) deploy(ctx context.Context, req *api.DeployStackRequest) ([]change, error) {
	if empty(req) {
		return nil, nil
	}
	if n := proto.Size(req); n > maxDeployBytes {
		return nil, reason.Error(codes.ResourceExhausted, reason.LimitExceeded,
			"stack %s: the deploy encodes to %d bytes, over the %d one deploy carries; create the largest secrets or configs first (%s) and give them as external",
			d.st.Name, n, maxDeployBytes, largestFiles(req))
	}
	resp, err := d.c.Control.DeployStack(ctx, req)
	if err != nil {
		return nil, mayHaveApplied(err, "jaco stack services "+d.st.Name)
	}
	for _, n := range resp.CreatedNetworks {
		d.say("Creating network %s", n)
	}
	for _, n := range resp.CreatedSecrets {
		d.say("Creating secret %s", n)
	}
	for _, n := range resp.CreatedConfigs {
		d.say("Creating config %s", n)
	}
	for _, n := range resp.CreatedVolumes {
		d.say("Creating volume %s", n)
	}
	written := map[string]change{}
	for _, s := range resp.Created {
		written[s.GetSpec().GetName()] = change{s, waitConverge}
	}
	for _, s := range resp.Updated {
		written[s.GetSpec().GetName()] = change{s, waitUpdate}
	}
	var changed []change
	for _, s := range req.Services {
		ch, ok := written[s.Spec.Name]
		if !ok {
			continue
		}
		if ch.kind == waitConverge {
			d.say("Creating service %s", s.Spec.Name)
		} else {
			d.say("Updating service %s", s.Spec.Name)
		}
		changed = append(changed, ch)
	}
	for _, n := range resp.Removed {
		d.say("Removing service %s", n)
	}
	return changed, nil
}

// largestFiles names the request's three largest secrets and configs.
func largestFiles(req *api.DeployStackRequest) string {
	files := append(slices.Clone(req.Secrets), req.Configs...)
	slices.SortFunc(files, func(a, b *api.FileSpec) int { return len(b.Data) - len(a.Data) })
	var out string
	for i, f := range files[:min(3, len(files))] {
		if i > 0 {
			out += ", "
		}
		out += fmt.Sprintf("%s: %d bytes", f.Name, len(f.Data))
	}
	if out == "" {
		return "the services' specs are what is large"
	}
	return out
}
