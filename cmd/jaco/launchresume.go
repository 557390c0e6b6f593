package main

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/client"
	"github.com/jaco-project/jaco/internal/launchdir"
)

// resumeLaunch is `jaco launch --resume ID|NAME [DIR]`, the spec's
// `cluster-launch --resume`: it re-examines the namespace and puts back
// what it should have. The namespace is its services' labels, so at
// least one service must remain; each carries the list of the
// configuration's services, the directory, the name and the metadata.
//   - A service of the list that is missing is created again from the
//     directory (DIR when given, else the recorded one), with the same
//     namespace: id, name, metadata, environment.
//   - A stopped service (launch stop) gets its configured replicas back
//     (or, global, loses the constraint that kept it off every node).
//   - A service with replicas given up on (failed past the restart
//     policy) is force-updated, which gives every slot a new replica.
//
// Running again changes nothing once the namespace is whole.
func resumeLaunch(cmd *cobra.Command, g *globals, f *launchFlags, args []string) error {
	return g.stream(cmd.Context(), func(ctx context.Context, c *client.Client) error {
		cctx, cancel := context.WithTimeout(ctx, g.timeout)
		id, err := resume(cctx, cmd, c, g, f.resume, args)
		cancel()
		if err != nil || f.detach {
			return err
		}
		return waitLaunch(ctx, cmd.OutOrStdout(), c, id, f)
	})
}

func resume(ctx context.Context, cmd *cobra.Command, c *client.Client, g *globals, which string, args []string) (string, error) {
	out := cmd.OutOrStdout()
	cons := g.readConsistency(api.ReadConsistency_READ_CONSISTENCY_LINEARIZABLE)
	v, svcs, err := namespaceServices(ctx, c, cons, which)
	if err != nil {
		return "", err
	}
	ns, _ := launchdir.FromLabels(svcs[0].Spec.Labels)
	have := map[string]bool{}
	var want []string
	for _, s := range svcs {
		have[s.Spec.Labels[launchdir.LabelService]] = true
		for _, name := range strings.Split(s.Spec.Labels[launchdir.LabelServices], ",") {
			if name != "" && !slices.Contains(want, name) {
				want = append(want, name)
			}
		}
	}
	var missing []string
	for _, name := range want {
		if !have[name] {
			missing = append(missing, name)
		}
	}
	if len(missing) > 0 {
		dir := v.Dir
		if len(args) == 1 {
			dir = args[0]
		}
		if err := recreate(ctx, cmd, c, g, ns, dir, missing); err != nil {
			return "", err
		}
	}
	tasks, err := c.ListTasks(ctx, &api.ListTasksRequest{Consistency: cons})
	if err != nil {
		return "", err
	}
	givenUp := map[string]bool{}
	for _, nv := range namespaceViews(svcs, tasks, time.Now(), time.Hour) {
		for _, s := range nv.Services {
			givenUp[s.ID] = s.GivenUp > 0
		}
	}
	for _, s := range dependencyFirst(svcs) {
		_, stopped := s.Spec.Labels[labelStopped]
		if !stopped && !givenUp[s.Id] {
			continue
		}
		fmt.Fprintf(out, "Resuming service %s\n", s.Spec.Name)
		_, err := updateService(ctx, c, cons, s.Id, func(spec *api.ServiceSpec) error {
			if stopped {
				startSpec(spec)
			}
			if givenUp[s.Id] {
				spec.ForceUpdate++
			}
			return nil
		})
		if err != nil {
			return "", err
		}
	}
	fmt.Fprintln(out, ns.ID)
	return ns.ID, nil
}

// recreate creates the missing services of ns from the configuration in
// dir, which is validated whole first.
func recreate(ctx context.Context, cmd *cobra.Command, c *client.Client, g *globals, ns launchdir.Namespace, dir string, missing []string) error {
	if dir == "" {
		return fmt.Errorf("services %s of launch %s are missing and no directory is recorded: give it (jaco launch --resume %s DIR)",
			strings.Join(missing, ", "), ns.ID, ns.ID)
	}
	cfg, err := loadLaunch(cmd, dir)
	if err != nil {
		return err
	}
	specs, err := launchdir.Instantiate(cfg, ns)
	if err != nil {
		return err
	}
	var create []*api.ServiceSpec
	for _, name := range missing {
		i := slices.IndexFunc(specs, func(s *api.ServiceSpec) bool { return s.Labels[launchdir.LabelService] == name })
		if i < 0 {
			return fmt.Errorf("service %s of launch %s is missing and %s has no directory %s", name, ns.ID, dir, name)
		}
		create = append(create, specs[i])
	}
	// specs is in dependency order; keep it.
	slices.SortFunc(create, func(a, b *api.ServiceSpec) int {
		return slices.Index(specs, a) - slices.Index(specs, b)
	})
	return createServices(ctx, cmd.OutOrStdout(), c, g, create)
}

// startSpec undoes stopSpec: the configured replicas back, the stop
// constraint and mark gone.
func startSpec(spec *api.ServiceSpec) {
	delete(spec.Labels, labelStopped)
	if spec.Mode == api.ServiceMode_SERVICE_MODE_GLOBAL {
		if p := spec.Placement; p != nil {
			p.Constraints = slices.DeleteFunc(p.Constraints, func(c string) bool { return c == stopConstraint })
		}
		return
	}
	if n, ok := configuredReplicas(spec); ok {
		spec.Replicas = n
	}
}

// dependencyFirst orders services so that each comes after those it
// depends on.
func dependencyFirst(svcs []*api.Service) []*api.Service {
	out := removalOrder(svcs)
	slices.Reverse(out)
	return out
}
