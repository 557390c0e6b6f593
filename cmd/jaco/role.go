package main

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/api/enumword"
	"github.com/jaco-project/jaco/client"
)

// nodePromoteCmd and nodeDemoteCmd set a node's desired role; the leader's
// role manager carries it out (promotion: the node joins raft as a
// nonvoter and gets a manager certificate; demotion: it leaves raft, then
// gets a worker certificate and keeps running as a worker).
func nodePromoteCmd(g *globals) *cobra.Command {
	return roleCmd(g, "promote NODE", "Make a worker a manager", api.NodeRole_NODE_ROLE_MANAGER)
}

func nodeDemoteCmd(g *globals) *cobra.Command {
	return roleCmd(g, "demote NODE", "Make a manager a worker (refused for the last manager or one that would cost quorum)", api.NodeRole_NODE_ROLE_WORKER)
}

func roleCmd(g *globals, use, short string, role api.NodeRole) *cobra.Command {
	return &cobra.Command{
		Use:   use,
		Short: short,
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			req := &api.UpdateNodeRequest{Node: args[0], Role: &role}
			return g.call(cmd.Context(), func(ctx context.Context, c *client.Client) error {
				resp, err := c.Control.UpdateNode(ctx, req)
				if err != nil {
					return mayHaveApplied(err, "jaco node inspect "+args[0])
				}
				verb := "promotion"
				if role == api.NodeRole_NODE_ROLE_WORKER {
					verb = "demotion"
				}
				if resp.Node.Role == role {
					fmt.Fprintf(cmd.OutOrStdout(), "%s is already a %s\n", terminalSafe(resp.Node.Hostname), enumword.Of(role))
				} else {
					fmt.Fprintf(cmd.OutOrStdout(), "%s of %s requested; the leader carries it out (jaco cluster status shows raft membership)\n", verb, terminalSafe(resp.Node.Hostname))
				}
				return nil
			})
		},
	}
}
