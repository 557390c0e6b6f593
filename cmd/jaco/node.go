package main

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/client"
)

func nodeCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{Use: "node", Short: "Inspect and manage nodes"}
	cmd.AddCommand(nodeLsCmd(g), nodeInspectCmd(g))
	return cmd
}

// nodeView is the JSON shape of one node in `jaco node ls --format json`.
type nodeView struct {
	ID       string `json:"id"`
	Hostname string `json:"hostname"`
	Role     string `json:"role"`
	Address  string `json:"address"`
	RaftID   string `json:"raft_id,omitempty"`
}

func nodeLsCmd(g *globals) *cobra.Command {
	var format string
	cmd := &cobra.Command{
		Use:     "ls",
		Aliases: []string{"list"},
		Short:   "List the cluster's nodes",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkFormat(format); err != nil {
				return err
			}
			return g.call(cmd.Context(), func(ctx context.Context, c *client.Client) error {
				resp, err := c.Control.ListNodes(ctx, &api.ListNodesRequest{})
				if err != nil {
					return err
				}
				views := make([]nodeView, 0, len(resp.Nodes))
				for _, n := range resp.Nodes {
					views = append(views, toNodeView(n))
				}
				if format == "json" {
					return writeJSON(cmd.OutOrStdout(), views)
				}
				rows := make([]string, len(views))
				for i, v := range views {
					rows[i] = fmt.Sprintf("%s\t%s\t%s\t%s", v.ID, v.Hostname, v.Role, v.Address)
				}
				return table(cmd.OutOrStdout(), "ID\tHOSTNAME\tROLE\tADDRESS", rows)
			})
		},
	}
	formatFlag(cmd, &format)
	return cmd
}

func toNodeView(n *api.Node) nodeView {
	v := nodeView{ID: n.Id, Hostname: n.Hostname, Role: word(n.Role.String(), "NODE_ROLE_"), Address: n.Address}
	if n.RaftId != 0 {
		v.RaftID = fmt.Sprintf("%x", n.RaftId)
	}
	return v
}

func nodeInspectCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "inspect NODE",
		Short: "Show one node, named by id or hostname, as JSON",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return g.call(cmd.Context(), func(ctx context.Context, c *client.Client) error {
				resp, err := c.Control.GetNode(ctx, &api.GetNodeRequest{Node: args[0]})
				if err != nil {
					return err
				}
				return writeJSON(cmd.OutOrStdout(), toNodeView(resp.Node))
			})
		},
	}
}
