package main

import (
	"context"
	"fmt"
	"io"
	"maps"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/api/enumword"
	"github.com/jaco-project/jaco/client"
)

func nodeCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{Use: "node", Short: "Inspect and manage nodes"}
	cmd.AddCommand(nodeLsCmd(g), nodeInspectCmd(g), issueJoinTokenCmd(g), nodeJoinCmd(g), nodeRemoveCmd(g), nodeUpdateCmd(g), nodePromoteCmd(g), nodeDemoteCmd(g), nodeUnlockCmd(g))
	return cmd
}

// nodeView is the JSON shape of one node in `jaco node ls --format json`.
type nodeView struct {
	ID           string            `json:"id"`
	Hostname     string            `json:"hostname"`
	Role         string            `json:"role"`
	Address      string            `json:"address"`
	RaftID       string            `json:"raft_id"`
	State        string            `json:"state"`
	StateMessage string            `json:"state_message"`
	Availability string            `json:"availability"`
	Labels       map[string]string `json:"labels"`
	Drain        *drainView        `json:"drain"`
}

// drainView is a node's drain progress, written by the leader's drain
// machine.
type drainView struct {
	State   string   `json:"state"`
	Moved   uint32   `json:"moved"`
	Total   uint32   `json:"total"`
	Message string   `json:"message"`
	Remove  bool     `json:"remove"`
	Force   bool     `json:"force"`
	Timeout string   `json:"replacement_timeout"`
	Stuck   []string `json:"stuck_task_ids"`
}

func toDrainView(d *api.NodeDrain) *drainView {
	if d.GetState() == api.DrainState_DRAIN_STATE_NONE {
		return nil
	}
	v := &drainView{State: enumword.Of(d.State), Moved: d.Moved, Total: d.Total,
		Message: d.Message, Remove: d.Remove, Force: d.Force, Stuck: append([]string{}, d.StuckTaskIds...)}
	if d.ReplacementTimeout != nil {
		v.Timeout = d.ReplacementTimeout.AsDuration().String()
	}
	return v
}

// progress is a drain in a few words: "draining 2/6".
func (d *drainView) progress() string {
	if d == nil {
		return "-"
	}
	return fmt.Sprintf("%s %d/%d", d.State, d.Moved, d.Total)
}

func nodeLsCmd(g *globals) *cobra.Command {
	lf := listFlags{keys: map[string][]string{"id": nil, "name": nil, "label": nil,
		"role": {"manager", "worker"}, "availability": {"active", "pause", "drain"}}}
	cmd := &cobra.Command{
		Use:     "ls",
		Aliases: []string{"list"},
		Short:   "List the cluster's nodes",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := lf.check(); err != nil {
				return err
			}
			return g.call(cmd.Context(), func(ctx context.Context, c *client.Client) error {
				nodes, err := c.ListNodes(ctx, &api.ListNodesRequest{Consistency: g.readConsistency(api.ReadConsistency_READ_CONSISTENCY_LOCAL)})
				if err != nil {
					return err
				}
				views := make([]nodeView, 0, len(nodes))
				for _, n := range nodes {
					if v := toNodeView(n); v.passes(&lf) {
						views = append(views, v)
					}
				}
				return writeList(cmd, &lf, views, func(v nodeView) string { return v.ID }, nodeTable)
			})
		},
	}
	lf.add(cmd, "id (prefix), name (hostname prefix), role (manager|worker), label (KEY or KEY=VALUE), availability (active|pause|drain)")
	return cmd
}

// passes reports whether the node passes lf's filters.
func (v nodeView) passes(lf *listFlags) bool {
	label := func(f string) bool {
		k, want, withValue := strings.Cut(f, "=")
		got, ok := v.Labels[k]
		return ok && (!withValue || got == want)
	}
	return lf.match("id", prefix(v.ID)) && lf.match("name", prefix(v.Hostname)) && lf.match("role", equal(v.Role)) &&
		lf.match("label", label) && lf.match("availability", equal(v.Availability))
}

func nodeTable(w io.Writer, views []nodeView) error {
	rows := make([][]string, len(views))
	for i, v := range views {
		rows[i] = []string{v.ID, v.Hostname, v.Role, v.Address, v.Availability, v.Drain.progress(), v.stateColumn()}
	}
	return table(w, "ID\tHOSTNAME\tROLE\tADDRESS\tAVAILABILITY\tDRAIN\tSTATE", rows)
}

func toNodeView(n *api.Node) nodeView {
	v := nodeView{ID: n.Id, Hostname: n.Hostname, Role: enumword.Of(n.Role), Address: n.Address,
		Availability: enumword.Of(n.Availability), Labels: n.Labels, Drain: toDrainView(n.Drain)}
	if v.Labels == nil {
		v.Labels = map[string]string{} // {} as every view writes an empty map
	}
	if n.RaftId != 0 {
		v.RaftID = fmt.Sprintf("%x", n.RaftId)
	}
	v.State, v.StateMessage = nodeState(n)
	return v
}

func nodeInspectCmd(g *globals) *cobra.Command {
	var out inspectFlags
	cmd := &cobra.Command{
		Use:   "inspect NODE",
		Short: "Show one node, named by id or hostname, as JSON (--pretty for people)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := out.check(); err != nil {
				return err
			}
			return g.call(cmd.Context(), func(ctx context.Context, c *client.Client) error {
				resp, err := c.Control.GetNode(ctx, &api.GetNodeRequest{Node: args[0],
					Consistency: g.readConsistency(api.ReadConsistency_READ_CONSISTENCY_LINEARIZABLE)})
				if err != nil {
					return err
				}
				return out.write(cmd.OutOrStdout(), protoView(resp.Node))
			})
		},
	}
	out.add(cmd)
	return cmd
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
	var rejoin bool
	cmd := &cobra.Command{
		Use:   "join --peer HOST:PORT --token TOKEN [--rejoin]",
		Short: "Make the local daemon join the cluster that PEER belongs to",
		Long: "Make the local daemon join the cluster that PEER belongs to.\n\n" +
			"With --rejoin, a worker whose certificate expired while it was off comes back with a worker\n" +
			"token: it keeps its node id and data dir, and its agent re-adopts the replicas still running.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if peer == "" || token == "" {
				return fmt.Errorf("--peer and --token are both required")
			}
			return g.call(cmd.Context(), func(ctx context.Context, c *client.Client) error {
				resp, err := c.Cluster.Join(ctx, &api.JoinClusterRequest{Peer: peer, Token: token, Rejoin: rejoin})
				if err != nil {
					return err
				}
				if rejoin {
					fmt.Fprintf(cmd.OutOrStdout(), "Rejoined cluster %s as node %s, with a fresh certificate.\n", resp.ClusterId, resp.NodeId)
					return nil
				}
				fmt.Fprintf(cmd.OutOrStdout(), "Joined cluster %s as node %s.\n", resp.ClusterId, resp.NodeId)
				return nil
			})
		},
	}
	cmd.Flags().StringVar(&peer, "peer", "", "address (HOST:PORT) of any manager of the cluster")
	cmd.Flags().StringVar(&token, "token", "", "join token from 'jaco node issue-join-token'")
	cmd.Flags().BoolVar(&rejoin, "rejoin", false, "bring back this worker, whose certificate expired, under its node id (a worker token)")
	return cmd
}

func nodeRemoveCmd(g *globals) *cobra.Command {
	var (
		force, detach bool
		timeout       time.Duration
	)
	cmd := &cobra.Command{
		Use:   "remove [--force] [--drain-timeout D] [--detach] NODE",
		Short: "Drain a node, named by id or hostname, and take it out of the cluster",
		Long: "Drain a node, then take it out of the cluster. Every replica on it first gets a replacement\n" +
			"elsewhere and keeps running until that one is healthy; global replicas are dropped. A node\n" +
			"hosting replicas pinned to it is refused unless --force (they are then stopped). A replacement\n" +
			"not healthy within --drain-timeout stops the drain (drain_timeout). Progress is shown until the\n" +
			"node is gone, unless --detach; 'jaco node inspect NODE' shows it from anywhere. A manager leaves\n" +
			"raft first, voters demoted as needed so the remaining managers keep a safe voter set; removing\n" +
			"the leader hands leadership over first.",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			req := &api.RemoveNodeRequest{Node: args[0], Force: force}
			if timeout > 0 {
				req.DrainTimeout = durationpb.New(timeout)
			}
			var draining bool
			err := g.call(cmd.Context(), func(ctx context.Context, c *client.Client) error {
				resp, err := c.Control.RemoveNode(ctx, req)
				draining = resp.GetDraining()
				return mayHaveApplied(err, "jaco node inspect "+args[0])
			})
			if err != nil {
				return err
			}
			if !draining {
				fmt.Fprintf(cmd.OutOrStdout(), "Node %s removed.\n", args[0])
				return nil
			}
			if detach {
				fmt.Fprintf(cmd.OutOrStdout(), "Node %s is being drained and removed; follow with 'jaco node inspect %s'.\n", args[0], args[0])
				return nil
			}
			return g.stream(cmd.Context(), func(ctx context.Context, c *client.Client) error {
				return followRemoval(ctx, c, args[0], g.timeout, cmd.OutOrStdout(), cmd.ErrOrStderr())
			})
		},
	}
	cmd.Flags().BoolVar(&force, "force", false, "drain even if the node hosts pinned replicas (they are stopped)")
	cmd.Flags().DurationVar(&timeout, "drain-timeout", 0, "how long each replacement may take to become healthy (default 5m)")
	cmd.Flags().BoolVar(&detach, "detach", false, "return once the drain has started")
	return cmd
}

func nodeUpdateCmd(g *globals) *cobra.Command {
	var availability string
	var addLabels, rmLabels []string
	var drainTimeout time.Duration
	var force bool
	cmd := &cobra.Command{
		Use:   "update [--availability active|pause|drain] [--label-add K=V] [--label-rm K] NODE",
		Short: "Change a node's availability or labels",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			req := &api.UpdateNodeRequest{Node: args[0], SetLabels: map[string]string{}, RemoveLabels: rmLabels, Force: force}
			if drainTimeout > 0 {
				req.DrainTimeout = durationpb.New(drainTimeout)
			}
			if availability != "" {
				a, ok := api.NodeAvailability_value["NODE_AVAILABILITY_"+strings.ToUpper(availability)]
				if !ok {
					return fmt.Errorf("--availability must be active, pause or drain, not %q", availability)
				}
				av := api.NodeAvailability(a)
				req.Availability = &av
			}
			labels, err := parseLabels("--label-add", addLabels)
			if err != nil {
				return err
			}
			maps.Copy(req.SetLabels, labels)
			return g.call(cmd.Context(), func(ctx context.Context, c *client.Client) error {
				resp, err := c.Control.UpdateNode(ctx, req)
				if err != nil {
					return mayHaveApplied(err, "jaco node inspect "+args[0])
				}
				if d := toDrainView(resp.Node.GetDrain()); d != nil && req.Availability != nil {
					fmt.Fprintf(cmd.OutOrStdout(), "Node %s: %s; follow with 'jaco node inspect %s'.\n", args[0], d.progress(), args[0])
				}
				return nil
			})
		},
	}
	cmd.Flags().StringVar(&availability, "availability", "", "active, pause (no new replicas) or drain (move replicas away; active cancels)")
	cmd.Flags().DurationVar(&drainTimeout, "drain-timeout", 0, "with drain: how long each replacement may take to become healthy (default 5m)")
	cmd.Flags().BoolVar(&force, "force", false, "with drain: drain even if the node hosts pinned replicas (they are stopped)")
	cmd.Flags().StringArrayVar(&addLabels, "label-add", nil, "add or replace a label KEY=VALUE (repeatable)")
	cmd.Flags().StringArrayVar(&rmLabels, "label-rm", nil, "remove a label (repeatable)")
	return cmd
}
