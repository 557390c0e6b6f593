package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/client"
)

func serviceCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{Use: "service", Short: "Declare and inspect services"}
	cmd.AddCommand(serviceCreateCmd(g), serviceLsCmd(g), servicePsCmd(g), serviceInspectCmd(g),
		serviceUpdateCmd(g), serviceRollbackCmd(g), serviceScaleCmd(g), serviceRmCmd(g), serviceLogsCmd(g),
		serviceRebalanceCmd(g))
	return cmd
}

func serviceCreateCmd(g *globals) *cobra.Command {
	var f specFlags
	var ra registryAuthFlags
	var wf waitFlags
	var name string
	cmd := &cobra.Command{
		Use:   "create --name NAME [--replicas N | --mode global] (IMAGE | --bundle DIR) [-- COMMAND ARGS...]",
		Short: "Declare a service; the cluster keeps its replicas running",
		Long: "Declare a service; the cluster keeps its replicas running. The service's id is printed first." + waitHelp +
			"\nA created service has converged once every replica runs and has run for the update monitor period.",
		RunE: func(cmd *cobra.Command, args []string) error {
			spec := &api.ServiceSpec{Name: name}
			rest := args
			if f.bundle == "" {
				if cmd.ArgsLenAtDash() == 0 || len(args) == 0 {
					return fmt.Errorf("give an IMAGE or --bundle DIR")
				}
				spec.Image, rest = args[0], args[1:]
			} else if cmd.ArgsLenAtDash() > 0 {
				return fmt.Errorf("with --bundle, put the command after --")
			}
			spec.Command = rest
			if err := f.apply(cmd, spec, true); err != nil {
				return err
			}
			if err := ra.apply(spec); err != nil {
				return err
			}
			return g.writeAndWait(cmd, &wf, waitConverge, func(ctx context.Context, c *client.Client) (*api.Service, error) {
				resp, err := c.Control.CreateService(ctx, &api.CreateServiceRequest{Spec: spec})
				if err != nil {
					return nil, mayHaveApplied(err, "jaco service inspect "+name)
				}
				fmt.Fprintln(cmd.OutOrStdout(), resp.Service.Id)
				return resp.Service, nil
			})
		},
	}
	cmd.Flags().StringVar(&name, "name", "", "service name (required)")
	_ = cmd.MarkFlagRequired("name")
	f.register(cmd.Flags())
	ra.register(cmd.Flags())
	wf.register(cmd)
	return cmd
}

func serviceUpdateCmd(g *globals) *cobra.Command {
	var f specFlags
	var ra registryAuthFlags
	var edits listEdits
	var wf waitFlags
	var image string
	var force, rollback bool
	cmd := &cobra.Command{
		Use:   "update SERVICE [flags] [-- COMMAND ARGS...]",
		Short: "Change a service; replicas running the old spec are replaced",
		Long: "Change a service; replicas running the old spec are replaced under its update policy. The same\n" +
			"spec again (no flags) resumes a paused update or rollback; --rollback returns to the previous spec." + waitHelp,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			name := args[0]
			if rollback {
				if err := onlyWaitFlags(cmd, "rollback"); err != nil {
					return err
				}
				if len(args) > 1 {
					return fmt.Errorf("--rollback returns to the previous spec: give no command")
				}
				return g.writeAndWait(cmd, &wf, waitRollback, rollBack(name))
			}
			if err := edits.check(cmd); err != nil {
				return err
			}
			return g.writeAndWait(cmd, &wf, waitUpdate, func(ctx context.Context, c *client.Client) (*api.Service, error) {
				return updateService(ctx, c, g.readConsistency(api.ReadConsistency_READ_CONSISTENCY_LINEARIZABLE), name, func(spec *api.ServiceSpec) error {
					if image != "" {
						spec.Image, spec.Bundle = image, nil
					}
					if cmd.ArgsLenAtDash() >= 0 {
						spec.Command = args[cmd.ArgsLenAtDash():]
					}
					if force {
						spec.ForceUpdate++
					}
					if err := f.apply(cmd, spec, false); err != nil {
						return err
					}
					if err := ra.apply(spec); err != nil {
						return err
					}
					return edits.apply(spec)
				})
			})
		},
	}
	cmd.Flags().StringVar(&image, "image", "", "new image")
	cmd.Flags().BoolVar(&force, "force", false, "replace every replica, even when the spec does not change")
	cmd.Flags().BoolVar(&rollback, "rollback", false, "return to the previous spec under the rollback policy (as jaco service rollback does)")
	f.register(cmd.Flags())
	ra.register(cmd.Flags())
	edits.register(cmd.Flags())
	wf.register(cmd)
	return cmd
}

// onlyWaitFlags refuses every flag of cmd but the wait flags and those
// named: a rollback has a spec of its own, so a change with it would be
// silently lost.
func onlyWaitFlags(cmd *cobra.Command, allowed ...string) error {
	var err error
	cmd.LocalNonPersistentFlags().VisitAll(func(fl *pflag.Flag) {
		switch {
		case err != nil, !fl.Changed, fl.Name == "detach", fl.Name == "quiet", slices.Contains(allowed, fl.Name):
		default:
			err = fmt.Errorf("--%s cannot be combined with a rollback, which returns to the previous spec", fl.Name)
		}
	})
	return err
}

func serviceRollbackCmd(g *globals) *cobra.Command {
	var wf waitFlags
	cmd := &cobra.Command{
		Use:   "rollback SERVICE",
		Short: "Return a service to its previous spec",
		Long: "Return a service to the spec it had before its latest update, replacing replicas under its\n" +
			"rollback policy. A second rollback returns to the spec the first one left." + waitHelp,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return g.writeAndWait(cmd, &wf, waitRollback, rollBack(args[0]))
		},
	}
	wf.register(cmd)
	return cmd
}

func rollBack(name string) func(context.Context, *client.Client) (*api.Service, error) {
	return func(ctx context.Context, c *client.Client) (*api.Service, error) {
		resp, err := c.Control.UpdateService(ctx, &api.UpdateServiceRequest{Service: name, Rollback: true})
		if err != nil {
			return nil, mayHaveApplied(err, "jaco service inspect "+name)
		}
		return resp.Service, nil
	}
}

// scaleArg is one NAME=N of `jaco service scale`.
type scaleArg struct {
	name     string
	replicas uint64
}

// parseScale reads NAME=N arguments. N is a base-10 count and nothing
// else: "3abc", "0x2", "1 2", "-1" and "" are refused, not read as
// whatever prefix parses.
func parseScale(args []string) ([]scaleArg, error) {
	seen := map[string]bool{}
	out := make([]scaleArg, 0, len(args))
	for _, a := range args {
		name, count, ok := strings.Cut(a, "=")
		if !ok || name == "" {
			return nil, fmt.Errorf("want SERVICE=REPLICAS, not %q", a)
		}
		n, err := strconv.ParseUint(count, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("%q: the replica count must be a whole number such as 3, not %q", a, count)
		}
		if seen[name] {
			return nil, fmt.Errorf("service %s is named twice", name)
		}
		seen[name] = true
		out = append(out, scaleArg{name, n})
	}
	return out, nil
}

func serviceScaleCmd(g *globals) *cobra.Command {
	var wf waitFlags
	cmd := &cobra.Command{
		Use:   "scale SERVICE=REPLICAS...",
		Short: "Change replicated services' replica counts",
		Long: "Change replicated services' replica counts: every change is made first, then each service is\n" +
			"waited for in turn. A service that cannot be scaled does not stop the others." + waitHelp,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			scales, err := parseScale(args)
			if err != nil {
				return err
			}
			cons := g.readConsistency(api.ReadConsistency_READ_CONSISTENCY_LINEARIZABLE)
			return g.stream(cmd.Context(), func(ctx context.Context, c *client.Client) error {
				var errs []error
				var scaled []*api.Service
				for _, s := range scales {
					wctx, cancel := context.WithTimeout(ctx, g.timeout)
					svc, err := updateService(wctx, c, cons, s.name, func(spec *api.ServiceSpec) error {
						spec.Replicas = s.replicas
						return nil
					})
					cancel()
					if err != nil {
						errs = append(errs, err) // the server's sentence names the service
						continue
					}
					fmt.Fprintf(cmd.OutOrStdout(), "%s scaled to %d\n", terminalSafe(s.name), s.replicas)
					scaled = append(scaled, svc)
				}
				if !wf.detach {
					for _, svc := range scaled {
						if err := g.wait(ctx, cmd, c, &wf, waitConverge, svc); err != nil {
							errs = append(errs, err)
						}
					}
				}
				return lastOf(cmd.ErrOrStderr(), errs)
			})
		},
	}
	wf.register(cmd)
	return cmd
}

// lastOf prints every error but the last and returns that one, for the
// caller to print: each keeps its own reason word, which a joined error
// would lose.
func lastOf(stderr io.Writer, errs []error) error {
	if len(errs) == 0 {
		return nil
	}
	for _, err := range errs[:len(errs)-1] {
		printFailure(stderr, err)
	}
	return errs[len(errs)-1]
}

// writeAndWait makes a write within --timeout and, unless -d, waits for
// the service it returns to converge, for as long as that takes.
func (g *globals) writeAndWait(cmd *cobra.Command, wf *waitFlags, kind waitKind, write func(context.Context, *client.Client) (*api.Service, error)) error {
	return g.stream(cmd.Context(), func(ctx context.Context, c *client.Client) error {
		wctx, cancel := context.WithTimeout(ctx, g.timeout)
		svc, err := write(wctx, c)
		cancel()
		if err != nil || wf.detach {
			return err
		}
		return g.wait(ctx, cmd, c, wf, kind, svc)
	})
}

// wait shows svc's progress until it has converged.
func (g *globals) wait(ctx context.Context, cmd *cobra.Command, c *client.Client, wf *waitFlags, kind waitKind, svc *api.Service) error {
	var hostnames map[string]string
	if api.PerNode(svc.GetSpec().GetMode()) {
		// Best effort: a node the list misses is shown by id.
		lctx, cancel := context.WithTimeout(ctx, g.timeout)
		nodes, err := c.ListNodes(lctx, &api.ListNodesRequest{})
		cancel()
		if err == nil {
			hostnames = make(map[string]string, len(nodes))
			for _, n := range nodes {
				hostnames[n.Id] = n.Hostname
			}
		}
	}
	p := newProgress(kind, svc, hostnames)
	return waitConverged(ctx, c.Control, svc, p, outputFor(cmd.OutOrStdout(), wf.quiet), g.timeout)
}

// updateService reads a service, changes its spec and writes it back based
// on the version read, so a concurrent change is refused, not overwritten.
// Callers read linearizably unless --consistency says otherwise: a change
// decided from a stale spec would only be refused.
func updateService(ctx context.Context, c *client.Client, cons api.ReadConsistency, name string, change func(*api.ServiceSpec) error) (*api.Service, error) {
	got, err := c.Control.GetService(ctx, &api.GetServiceRequest{Service: name, Consistency: cons})
	if err != nil {
		return nil, err
	}
	spec := got.Service.Spec
	if err := change(spec); err != nil {
		return nil, err
	}
	resp, err := c.Control.UpdateService(ctx, &api.UpdateServiceRequest{Service: got.Service.Id, Version: got.Service.Meta.GetVersion(), Spec: spec})
	if err != nil {
		return nil, mayHaveApplied(err, "jaco service inspect "+name)
	}
	return resp.Service, nil
}

func serviceRmCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:     "rm SERVICE...",
		Aliases: []string{"remove"},
		Short:   "Remove services; their replicas are stopped",
		Args:    cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return g.call(cmd.Context(), func(ctx context.Context, c *client.Client) error {
				for _, name := range args {
					if _, err := c.Control.RemoveService(ctx, &api.RemoveServiceRequest{Service: name}); err != nil {
						return mayHaveApplied(err, "jaco service inspect "+name)
					}
				}
				return nil
			})
		},
	}
}
