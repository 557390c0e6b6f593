package main

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/client"
)

func serviceInspectCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "inspect SERVICE",
		Short: "Show one service as JSON",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return g.call(cmd.Context(), func(ctx context.Context, c *client.Client) error {
				resp, err := c.Control.GetService(ctx, &api.GetServiceRequest{Service: args[0],
					Consistency: g.readConsistency(api.ReadConsistency_READ_CONSISTENCY_LINEARIZABLE)})
				if err != nil {
					return err
				}
				return writeJSON(cmd.OutOrStdout(), protoView(resp.Service))
			})
		},
	}
}
