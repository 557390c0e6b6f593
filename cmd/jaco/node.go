package main

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/client"
)

func nodeCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{Use: "node", Short: "Inspect and manage nodes"}
	cmd.AddCommand(nodeLsCmd(g), nodeInspectCmd(g), issueJoinTokenCmd(g), nodeJoinCmd(g), nodeRemoveCmd(g))
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

func issueJoinTokenCmd(g *globals) *cobra.Command {
	var (
		role string
		ttl  time.Duration
	)
	cmd := &cobra.Command{
		Use:   "issue-join-token",
		Short: "Mint a single-use token that lets one node join (printed once)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			roles := map[string]api.NodeRole{"manager": api.NodeRole_NODE_ROLE_MANAGER, "worker": api.NodeRole_NODE_ROLE_WORKER}
			r, ok := roles[role]
			if !ok {
				return fmt.Errorf("--role must be manager or worker, not %q", role)
			}
			return g.call(cmd.Context(), func(ctx context.Context, c *client.Client) error {
				resp, err := c.Control.IssueJoinToken(ctx, &api.IssueJoinTokenRequest{Role: r, Ttl: durationpb.New(ttl)})
				if err != nil {
					return err
				}
				fmt.Fprintln(cmd.OutOrStdout(), resp.Token)
				fmt.Fprintf(cmd.ErrOrStderr(), "single use, %s, valid until %s\n", role, resp.ExpiresAt.AsTime().Local().Format(time.RFC3339))
				return nil
			})
		},
	}
	cmd.Flags().StringVar(&role, "role", "worker", "what the joining node becomes: manager or worker")
	cmd.Flags().DurationVar(&ttl, "ttl", 24*time.Hour, "how long the token stays valid")
	return cmd
}

func nodeJoinCmd(g *globals) *cobra.Command {
	var peer, token string
	cmd := &cobra.Command{
		Use:   "join --peer HOST:PORT --token TOKEN",
		Short: "Make the local daemon join the cluster that PEER belongs to",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if peer == "" || token == "" {
				return fmt.Errorf("--peer and --token are both required")
			}
			return g.call(cmd.Context(), func(ctx context.Context, c *client.Client) error {
				resp, err := c.Cluster.Join(ctx, &api.JoinClusterRequest{Peer: peer, Token: token})
				if err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "Joined cluster %s as node %s.\n", resp.ClusterId, resp.NodeId)
				return nil
			})
		},
	}
	cmd.Flags().StringVar(&peer, "peer", "", "address (HOST:PORT) of any manager of the cluster")
	cmd.Flags().StringVar(&token, "token", "", "join token from 'jaco node issue-join-token'")
	return cmd
}

func nodeRemoveCmd(g *globals) *cobra.Command {
	var force bool
	cmd := &cobra.Command{
		Use:   "remove NODE",
		Short: "Take a node, named by id or hostname, out of the cluster",
		Long: "Take a node out of the cluster. A manager leaves raft first, voters demoted as needed so\n" +
			"the remaining managers keep a safe voter set; removing the leader hands leadership over first.",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return g.call(cmd.Context(), func(ctx context.Context, c *client.Client) error {
				if _, err := c.Control.RemoveNode(ctx, &api.RemoveNodeRequest{Node: args[0], Force: force}); err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "Node %s removed.\n", args[0])
				return nil
			})
		},
	}
	cmd.Flags().BoolVar(&force, "force", false, "remove even if the node hosts pinned replicas")
	return cmd
}
