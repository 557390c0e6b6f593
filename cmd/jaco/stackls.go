package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/client"
	"github.com/jaco-project/jaco/internal/compose"
)

// stackView is a row of `jaco stack ls`.
type stackView struct {
	Name     string `json:"name"`
	Services int    `json:"services"`
}

func stackLsCmd(g *globals) *cobra.Command {
	lf := listFlags{keys: map[string][]string{"name": nil}}
	cmd := &cobra.Command{
		Use:     "ls",
		Aliases: []string{"list"},
		Short:   "List stacks (services labelled " + compose.NamespaceLabel + ") with their service counts",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := lf.check(); err != nil {
				return err
			}
			return g.call(cmd.Context(), func(ctx context.Context, c *client.Client) error {
				svcs, err := c.ListServices(ctx, &api.ListServicesRequest{Consistency: g.readConsistency(api.ReadConsistency_READ_CONSISTENCY_LOCAL)})
				if err != nil {
					return err
				}
				counts := map[string]int{}
				for _, s := range svcs {
					if name, ok := s.GetSpec().GetLabels()[compose.NamespaceLabel]; ok {
						counts[name]++
					}
				}
				views := []stackView{}
				for name, n := range counts {
					if lf.match("name", prefix(name)) {
						views = append(views, stackView{Name: name, Services: n})
					}
				}
				slices.SortFunc(views, func(a, b stackView) int { return strings.Compare(a.Name, b.Name) })
				return writeList(cmd, &lf, views, func(v stackView) string { return v.Name }, func(w io.Writer, views []stackView) error {
					rows := make([][]string, len(views))
					for i, v := range views {
						rows[i] = []string{v.Name, fmt.Sprint(v.Services)}
					}
					return table(w, "NAME\tSERVICES", rows)
				})
			})
		},
	}
	lf.add(cmd, "name (prefix)")
	return cmd
}

func stackServicesCmd(g *globals) *cobra.Command {
	lf := listFlags{keys: map[string][]string{"id": nil, "name": nil, "mode": {"replicated", "global"}}}
	cmd := &cobra.Command{
		Use:   "services NAME",
		Short: "List a stack's services with their running and desired replicas and published ports",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := lf.check(); err != nil {
				return err
			}
			return g.call(cmd.Context(), func(ctx context.Context, c *client.Client) error {
				cons := g.readConsistency(api.ReadConsistency_READ_CONSISTENCY_LOCAL)
				svcs, counts, err := stackServicesCounted(ctx, c, cons, args[0])
				if err != nil {
					return err
				}
				if len(svcs) == 0 {
					return fmt.Errorf("no stack named %s", args[0])
				}
				views := filterServices(serviceViews(svcs, counts), &lf)
				return writeList(cmd, &lf, views, func(v serviceView) string { return v.ID }, serviceTable)
			})
		},
	}
	lf.add(cmd, "id (prefix), name (prefix), mode (replicated|global)")
	return cmd
}

func stackPsCmd(g *globals) *cobra.Command {
	lf := listFlags{keys: map[string][]string{"node": nil, "name": nil, "desired-state": {"running", "shutdown", "complete"}}}
	var all, noTrunc bool
	cmd := &cobra.Command{
		Use:   "ps NAME",
		Short: "List the replicas of a stack's services with their node and state",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := lf.check(); err != nil {
				return err
			}
			return g.call(cmd.Context(), func(ctx context.Context, c *client.Client) error {
				cons := g.readConsistency(api.ReadConsistency_READ_CONSISTENCY_LOCAL)
				svcs, err := stackServices(ctx, c, cons, args[0])
				if err != nil {
					return err
				}
				if len(svcs) == 0 {
					return fmt.Errorf("no stack named %s", args[0])
				}
				var listed []taskView
				for _, s := range svcs {
					views, err := listReplicas(ctx, c, s.Id, all || lf.has("desired-state"), cons)
					if err != nil {
						return err
					}
					listed = append(listed, views...)
				}
				views := filterReplicas(listed, &lf)
				return writeList(cmd, &lf, views, func(v taskView) string { return v.ID }, func(w io.Writer, views []taskView) error {
					return printReplicas(w, views, noTrunc)
				})
			})
		},
	}
	cmd.Flags().BoolVarP(&all, "all", "a", false, "also list replaced and ended replicas")
	cmd.Flags().BoolVar(&noTrunc, "no-trunc", false, "print the ERROR column whole, not cut to 40 characters")
	lf.add(cmd, "node (hostname or id), name (SERVICE.SLOT), desired-state (running|shutdown|complete)")
	return cmd
}

func stackRmCmd(g *globals) *cobra.Command {
	var volumes bool
	cmd := &cobra.Command{
		Use:     "rm [--volumes] NAME",
		Aliases: []string{"remove"},
		Short:   "Remove a stack: its services, then the networks, secrets and configs it created",
		Long: "Remove a stack: its services, then its networks, secrets and configs: everything labelled\n" +
			compose.NamespaceLabel + "=NAME. External networks, secrets and configs are left alone.\n" +
			"The stack's volumes are kept with their data (one line names them); --volumes removes those\n" +
			"labelled as the stack's too, once the replicas using them have stopped (it waits as long as their\n" +
			"stop and abort grace periods, plus --timeout). A volume without the label (external, made by hand,\n" +
			"another stack's) is never removed.",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			name := args[0]
			o := stackRmOptions{volumes: volumes, timeout: g.timeout}
			return g.stream(cmd.Context(), func(ctx context.Context, c *client.Client) error {
				return removeStack(ctx, cmd.OutOrStdout(), c, g.readConsistency(api.ReadConsistency_READ_CONSISTENCY_LINEARIZABLE), name, o)
			})
		},
	}
	cmd.Flags().BoolVar(&volumes, "volumes", false, "also remove the volumes the stack created, and their data, once its replicas have stopped")
	return cmd
}

// stackRmOptions: whether the stack's volumes go too, and --timeout,
// which bounds the removals (the wait for volumes takes longer).
type stackRmOptions struct {
	volumes bool
	timeout time.Duration
}

func removeStack(outer context.Context, out io.Writer, c *client.Client, cons api.ReadConsistency, name string, o stackRmOptions) error {
	ctx, cancel := context.WithTimeout(outer, o.timeout)
	defer cancel()
	svcs, err := stackServices(ctx, c, cons, name)
	if err != nil {
		return err
	}
	nets, err := stackNetworks(ctx, c, cons, name, svcs)
	if err != nil {
		return err
	}
	var secrets, configs []string
	sresp, err := c.Control.ListSecrets(ctx, &api.ListSecretsRequest{Consistency: cons})
	if err != nil {
		return err
	}
	for _, s := range sresp.Secrets {
		if s.GetSpec().GetLabels()[compose.NamespaceLabel] == name {
			secrets = append(secrets, s.GetSpec().GetName())
		}
	}
	cresp, err := c.Control.ListConfigs(ctx, &api.ListConfigsRequest{Consistency: cons})
	if err != nil {
		return err
	}
	for _, s := range cresp.Configs {
		if s.GetSpec().GetLabels()[compose.NamespaceLabel] == name {
			configs = append(configs, s.GetSpec().GetName())
		}
	}
	vols, err := stackVolumes(ctx, c, cons, name)
	if err != nil {
		return err
	}
	if len(svcs)+len(nets)+len(secrets)+len(configs)+len(vols) == 0 {
		return fmt.Errorf("no stack named %s", name)
	}
	for _, s := range removalOrder(svcs) {
		fmt.Fprintf(out, "Removing service %s\n", s.Spec.Name)
		if _, err := c.Control.RemoveService(ctx, &api.RemoveServiceRequest{Service: s.Id}); err != nil {
			return mayHaveApplied(err, "jaco service inspect "+s.Spec.Name)
		}
	}
	// Go on past one that cannot go (another service attached to the
	// network since): the rest still go, and every refusal is reported.
	var errs []error
	for _, n := range nets {
		fmt.Fprintf(out, "Removing network %s\n", n)
		if _, err := c.Control.RemoveNetwork(ctx, &api.RemoveNetworkRequest{Network: n}); err != nil {
			errs = append(errs, err)
		}
	}
	for _, s := range secrets {
		fmt.Fprintf(out, "Removing secret %s\n", s)
		if _, err := c.Control.RemoveSecret(ctx, &api.RemoveSecretRequest{Secret: s}); err != nil {
			errs = append(errs, err)
		}
	}
	for _, s := range configs {
		fmt.Fprintf(out, "Removing config %s\n", s)
		if _, err := c.Control.RemoveConfig(ctx, &api.RemoveConfigRequest{Config: s}); err != nil {
			errs = append(errs, err)
		}
	}
	switch {
	case len(vols) == 0:
	case !o.volumes:
		// Data is never deleted by surprise (docs/adr/0061-volumes.md).
		fmt.Fprintln(out, keptVolumesLine(name, vols))
	default:
		// Removed last: RemoveVolume is refused volume_in_use until the
		// replicas of the services just removed have ended.
		wait := volumeWait(svcs, o.timeout)
		vctx, vcancel := context.WithTimeout(outer, wait+o.timeout)
		defer vcancel()
		if err := removeVolumes(vctx, out, c, vols, time.Now().Add(wait)); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// stackNetworks names the networks stack created, sorted: those labelled
// with it, and, from before networks had labels, the unlabelled ones
// named STACK_* that its services attach to. An external network is
// neither: it has another name or no such label.
func stackNetworks(ctx context.Context, c *client.Client, cons api.ReadConsistency, stack string, svcs []*api.Service) ([]string, error) {
	resp, err := c.Control.ListNetworks(ctx, &api.ListNetworksRequest{Consistency: cons})
	if err != nil {
		return nil, err
	}
	attached := map[string]bool{}
	for _, s := range svcs {
		for _, n := range s.Spec.Networks {
			attached[n] = true
		}
	}
	var names []string
	for _, n := range resp.Networks {
		name := n.GetSpec().GetName()
		label, labelled := n.GetSpec().GetLabels()[compose.NamespaceLabel]
		if label == stack || !labelled && attached[name] && strings.HasPrefix(name, stack+"_") {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	return names, nil
}

// removalOrder puts every service before those it depends on: the
// manager refuses removing a service another one still depends on.
func removalOrder(svcs []*api.Service) []*api.Service {
	byName := map[string]*api.Service{}
	specs := make([]*api.ServiceSpec, len(svcs))
	for i, s := range svcs {
		byName[s.Spec.Name], specs[i] = s, s.Spec
	}
	order := dependencyOrder(specs)
	out := make([]*api.Service, 0, len(order))
	for i := len(order) - 1; i >= 0; i-- {
		out = append(out, byName[order[i].Name])
	}
	return out
}
