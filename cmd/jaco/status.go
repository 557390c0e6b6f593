package main

import (
	"context"
	"fmt"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/api/enumword"
	"github.com/jaco-project/jaco/api/reason"
	"github.com/jaco-project/jaco/client"
)

// workloadView is the JSON shape of `jaco status --format json`.
type workloadView struct {
	Nodes    []nodeStatusView `json:"nodes"`
	Services []serviceView    `json:"services"`
}

type nodeStatusView struct {
	Hostname     string `json:"hostname"`
	Role         string `json:"role"`
	Status       string `json:"status"`
	Availability string `json:"availability"`
	Replicas     int    `json:"replicas"`
	// Drain is the drain's progress ("draining: 2/6 moved", "timed_out:
	// ... pending: drain_timeout ..."), empty without one.
	Drain string `json:"drain"`
}

func statusCmd(g *globals) *cobra.Command {
	var format string
	cmd := &cobra.Command{
		Use:   "status",
		Short: "Nodes and services with replica counts, from this manager's own store (no leader needed); on a worker, its own replicas",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkFormat(format); err != nil {
				return err
			}
			return g.call(cmd.Context(), func(ctx context.Context, c *client.Client) error {
				v, err := clusterStatus(ctx, c, g.readConsistency(api.ReadConsistency_READ_CONSISTENCY_LOCAL))
				if reason.Of(err) == reason.NotAManager {
					// A worker holds no cluster state: show what it runs.
					return localStatus(ctx, cmd, c, format)
				}
				if err != nil {
					return err
				}
				if ok, err := writeAs(cmd.OutOrStdout(), format, v); ok {
					return err
				}
				w := cmd.OutOrStdout()
				rows := make([][]string, len(v.Nodes))
				for i, n := range v.Nodes {
					rows[i] = []string{n.Hostname, n.Role, n.Status, n.Availability, strconv.Itoa(n.Replicas), n.Drain}
				}
				if err := table(w, "NODE\tROLE\tSTATUS\tAVAILABILITY\tREPLICAS\tDRAIN", rows); err != nil {
					return err
				}
				fmt.Fprintln(w)
				rows = make([][]string, len(v.Services))
				for i, s := range v.Services {
					rows[i] = []string{s.Name, s.Mode, fmt.Sprintf("%d/%d", s.Running, s.Desired)}
				}
				return table(w, "SERVICE\tMODE\tRUNNING/DESIRED", rows)
			})
		},
	}
	formatFlag(cmd, &format)
	return cmd
}

func clusterStatus(ctx context.Context, c *client.Client, cons api.ReadConsistency) (*workloadView, error) {
	nodes, perNode, err := c.ListNodesCounted(ctx, &api.ListNodesRequest{Consistency: cons})
	if err != nil {
		return nil, err
	}
	v := &workloadView{}
	for _, n := range nodes {
		v.Nodes = append(v.Nodes, nodeStatusView{
			Hostname: n.Hostname, Role: enumword.Of(n.Role),
			Status:       enumword.Of(n.GetStatus().GetState()),
			Availability: enumword.Of(n.Availability), Replicas: int(perNode[n.Id].GetRunning()),
			Drain: statusDrain(n.GetDrain()),
		})
	}
	svcs, counts, err := c.ListServicesCounted(ctx, &api.ListServicesRequest{Consistency: cons})
	if err != nil {
		return nil, err
	}
	v.Services = serviceViews(svcs, counts)
	return v, nil
}

// statusDrain is a node's drain for `jaco status`: its progress, and for
// a timed-out drain the message naming the replica (pending: drain_timeout).
func statusDrain(d *api.NodeDrain) string {
	if d.GetState() == api.DrainState_DRAIN_STATE_NONE {
		return ""
	}
	line := drainLine(d)
	if d.GetState() == api.DrainState_DRAIN_STATE_TIMED_OUT {
		line += ": " + d.GetMessage()
	}
	return line
}

// localView is the JSON shape of `jaco status --format json` on a worker.
type localView struct {
	Worker   bool        `json:"worker"`
	Replicas []localTask `json:"replicas"`
}

type localTask struct {
	ID      string `json:"id"`
	Name    string `json:"name"`
	Desired string `json:"desired"`
	State   string `json:"state"`
}

// localStatus shows a worker's own replicas, from its agent: a worker
// keeps no copy of the cluster's state.
func localStatus(ctx context.Context, cmd *cobra.Command, c *client.Client, format string) error {
	replicas, err := c.ListLocalReplicas(ctx, nil)
	if err != nil {
		return err
	}
	v := localView{Worker: true, Replicas: []localTask{}}
	for _, t := range replicas {
		name := t.ServiceName + "." + fmt.Sprint(t.Slot)
		if t.Slot == 0 {
			name = t.ServiceName + " (global)"
		}
		v.Replicas = append(v.Replicas, localTask{ID: t.Id, Name: name,
			Desired: enumword.Of(t.DesiredState), State: stateWords(t.Status)})
	}
	if ok, err := writeAs(cmd.OutOrStdout(), format, v); ok {
		return err
	}
	w := cmd.OutOrStdout()
	fmt.Fprintln(w, "This node is a worker: the cluster's nodes and services are on the managers (jaco --server MANAGER:7000 status).")
	fmt.Fprintln(w, "Replicas on this node, as its agent sees them:")
	fmt.Fprintln(w)
	rows := make([][]string, len(v.Replicas))
	for i, r := range v.Replicas {
		rows[i] = []string{r.ID, r.Name, r.Desired, r.State}
	}
	return table(w, "ID\tNAME\tDESIRED\tSTATE", rows)
}
