package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/client"
)

func serviceCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{Use: "service", Short: "Declare and inspect services"}
	cmd.AddCommand(serviceCreateCmd(g), serviceLsCmd(g), servicePsCmd(g), serviceInspectCmd(g),
		serviceUpdateCmd(g), serviceScaleCmd(g), serviceRmCmd(g), serviceLogsCmd(g))
	return cmd
}

func serviceCreateCmd(g *globals) *cobra.Command {
	var f specFlags
	var name string
	cmd := &cobra.Command{
		Use:   "create --name NAME [--replicas N | --mode global] (IMAGE | --bundle DIR) [-- COMMAND ARGS...]",
		Short: "Declare a service; the cluster keeps its replicas running",
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
			return g.call(cmd.Context(), func(ctx context.Context, c *client.Client) error {
				resp, err := c.Control.CreateService(ctx, &api.CreateServiceRequest{Spec: spec})
				if err != nil {
					return mayHaveApplied(err, "jaco service inspect "+name)
				}
				fmt.Fprintln(cmd.OutOrStdout(), resp.Service.Id)
				return nil
			})
		},
	}
	cmd.Flags().StringVar(&name, "name", "", "service name (required)")
	_ = cmd.MarkFlagRequired("name")
	f.register(cmd.Flags())
	return cmd
}

func serviceUpdateCmd(g *globals) *cobra.Command {
	var f specFlags
	var image string
	cmd := &cobra.Command{
		Use:   "update SERVICE [flags] [-- COMMAND ARGS...]",
		Short: "Change a service; replicas running the old spec are replaced",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return g.call(cmd.Context(), func(ctx context.Context, c *client.Client) error {
				return updateService(ctx, c, g.readConsistency(api.ReadConsistency_READ_CONSISTENCY_LINEARIZABLE), args[0], func(spec *api.ServiceSpec) error {
					if image != "" {
						spec.Image, spec.Bundle = image, nil
					}
					if cmd.ArgsLenAtDash() >= 0 {
						spec.Command = args[cmd.ArgsLenAtDash():]
					}
					return f.apply(cmd, spec, false)
				})
			})
		},
	}
	cmd.Flags().StringVar(&image, "image", "", "new image")
	f.register(cmd.Flags())
	return cmd
}

func serviceScaleCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "scale SERVICE=REPLICAS",
		Short: "Change a replicated service's replica count",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			name, count, ok := strings.Cut(args[0], "=")
			var n uint64
			if _, err := fmt.Sscan(count, &n); !ok || err != nil {
				return fmt.Errorf("want SERVICE=REPLICAS, not %q", args[0])
			}
			return g.call(cmd.Context(), func(ctx context.Context, c *client.Client) error {
				return updateService(ctx, c, g.readConsistency(api.ReadConsistency_READ_CONSISTENCY_LINEARIZABLE), name, func(spec *api.ServiceSpec) error {
					spec.Replicas = n
					return nil
				})
			})
		},
	}
}

// updateService reads a service, changes its spec and writes it back based
// on the version read, so a concurrent change is refused, not overwritten.
// Callers read linearizably unless --consistency says otherwise: a change
// decided from a stale spec would only be refused.
func updateService(ctx context.Context, c *client.Client, cons api.ReadConsistency, name string, change func(*api.ServiceSpec) error) error {
	got, err := c.Control.GetService(ctx, &api.GetServiceRequest{Service: name, Consistency: cons})
	if err != nil {
		return err
	}
	spec := got.Service.Spec
	if err := change(spec); err != nil {
		return err
	}
	_, err = c.Control.UpdateService(ctx, &api.UpdateServiceRequest{Service: got.Service.Id, Version: got.Service.Meta.GetVersion(), Spec: spec})
	return mayHaveApplied(err, "jaco service inspect "+name)
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
