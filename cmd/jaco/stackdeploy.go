package main

import (
	"context"
	"fmt"
	"maps"
	"slices"

	"github.com/spf13/cobra"
	"google.golang.org/protobuf/proto"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/client"
	"github.com/jaco-project/jaco/internal/compose"
)

// deployer makes the cluster hold a stack: what is missing is created,
// services whose spec changed are updated, nothing else is touched.
type deployer struct {
	g     *globals
	cmd   *cobra.Command
	c     *client.Client
	st    *compose.Stack
	data  map[string][]byte
	prune bool
}

// change is a service written by the deploy, to wait for.
type change struct {
	svc  *api.Service
	kind waitKind
}

func (d *deployer) say(format string, args ...any) {
	fmt.Fprintf(d.cmd.OutOrStdout(), format+"\n", args...)
}

func (d *deployer) run(ctx context.Context) ([]change, error) {
	cons := d.g.readConsistency(api.ReadConsistency_READ_CONSISTENCY_LINEARIZABLE)
	existing, err := d.c.ListServices(ctx, &api.ListServicesRequest{Consistency: cons})
	if err != nil {
		return nil, err
	}
	byName := map[string]*api.Service{}
	for _, s := range existing {
		byName[s.Spec.Name] = s
	}
	// Refuse before any write: a service of the name that is not the
	// stack's would be taken over.
	for _, spec := range d.st.Services {
		if s, ok := byName[spec.Name]; ok && s.Spec.GetLabels()[compose.NamespaceLabel] != d.st.Name {
			return nil, fmt.Errorf("service %s exists and is not part of stack %s (no label %s=%s)",
				spec.Name, d.st.Name, compose.NamespaceLabel, d.st.Name)
		}
	}
	p, err := d.look(ctx, cons)
	if err != nil {
		return nil, err
	}
	// One request, applied whole or refused whole: a refusal of any part
	// leaves the cluster as it was (docs/adr/0062-atomic-stack-deploy.md).
	changed, err := d.deploy(ctx, d.plan(p, existing))
	if err != nil {
		return nil, err
	}
	if d.prune {
		d.pruneNetworks(ctx, p)
	}
	return changed, nil
}

// pruneNetworks removes the networks the stack created that the files no
// longer have. One still in use (by a service outside the stack, or by
// the spec an updated service would roll back to) is kept with a
// warning: the deploy itself has done what it was asked.
func (d *deployer) pruneNetworks(ctx context.Context, p present) {
	for _, name := range slices.Sorted(maps.Keys(p.networks)) {
		if p.networks[name].GetSpec().GetLabels()[compose.NamespaceLabel] != d.st.Name ||
			slices.ContainsFunc(d.st.Networks, func(n compose.Network) bool { return n.Name == name }) {
			continue
		}
		d.say("Removing network %s", name)
		if _, err := d.c.Control.RemoveNetwork(ctx, &api.RemoveNetworkRequest{Network: name}); err != nil {
			fmt.Fprintf(d.cmd.ErrOrStderr(), "Network %s is kept: %v\n", name, err)
		}
	}
}

// present is what the cluster holds already: networks by name, and the
// names of secrets and configs.
type present struct {
	networks         map[string]*api.Network
	secrets, configs map[string]bool
	// volumes by name (stackvolumes.go); nil when the stack has none.
	volumes map[string]*api.Volume
}

// look lists the networks, secrets, configs and volumes and refuses,
// before any write, external ones that do not exist.
func (d *deployer) look(ctx context.Context, cons api.ReadConsistency) (present, error) {
	p := present{map[string]*api.Network{}, map[string]bool{}, map[string]bool{}, nil}
	nets, err := d.c.Control.ListNetworks(ctx, &api.ListNetworksRequest{Consistency: cons})
	if err != nil {
		return p, err
	}
	for _, n := range nets.Networks {
		p.networks[n.GetSpec().GetName()] = n
	}
	secrets, err := d.c.Control.ListSecrets(ctx, &api.ListSecretsRequest{Consistency: cons})
	if err != nil {
		return p, err
	}
	for _, s := range secrets.Secrets {
		p.secrets[s.GetSpec().GetName()] = true
	}
	configs, err := d.c.Control.ListConfigs(ctx, &api.ListConfigsRequest{Consistency: cons})
	if err != nil {
		return p, err
	}
	for _, s := range configs.Configs {
		p.configs[s.GetSpec().GetName()] = true
	}
	for _, n := range d.st.Networks {
		if n.External && p.networks[n.Name] == nil {
			return p, fmt.Errorf("external network %s does not exist (jaco network create %s)", n.Name, n.Name)
		}
	}
	for _, f := range d.st.Secrets {
		if f.External && !p.secrets[f.Name] {
			return p, fmt.Errorf("external secret %s does not exist (jaco secret create %s FILE)", f.Name, f.Name)
		}
	}
	for _, f := range d.st.Configs {
		if f.External && !p.configs[f.Name] {
			return p, fmt.Errorf("external config %s does not exist (jaco config create %s FILE)", f.Name, f.Name)
		}
	}
	p.volumes, err = d.lookVolumes(ctx, cons)
	return p, err
}

// sameSpec reports whether the stored spec is the desired one, leaving
// out what the manager adds (references' ids, volume mounts' ids and
// options) or keeps (force_update, the registry credentials a read never
// shows).
func sameSpec(stored, desired *api.ServiceSpec) bool {
	a := proto.Clone(stored).(*api.ServiceSpec)
	for _, r := range append(slices.Clone(a.Secrets), a.Configs...) {
		r.Id = ""
	}
	a.ForceUpdate, a.RegistryAuth = 0, nil
	b := proto.Clone(desired).(*api.ServiceSpec)
	b.ForceUpdate, b.RegistryAuth = 0, nil
	withoutVolumeFill(a)
	withoutVolumeFill(b)
	return proto.Equal(a, b)
}

// dependencyOrder puts every service after those it depends on (within
// the stack), so that each names only services that exist; ties keep the
// given (name) order. The manager refuses cycles.
func dependencyOrder(specs []*api.ServiceSpec) []*api.ServiceSpec {
	byName := map[string]*api.ServiceSpec{}
	for _, s := range specs {
		byName[s.Name] = s
	}
	done := map[string]bool{}
	var out []*api.ServiceSpec
	var visit func(s *api.ServiceSpec, depth int)
	visit = func(s *api.ServiceSpec, depth int) {
		if done[s.Name] || depth > len(specs) {
			return
		}
		for _, dep := range s.DependsOn {
			if ds, ok := byName[dep]; ok {
				visit(ds, depth+1)
			}
		}
		if !done[s.Name] {
			done[s.Name] = true
			out = append(out, s)
		}
	}
	for _, s := range specs {
		visit(s, 0)
	}
	return out
}
