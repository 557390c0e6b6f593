package main

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/api/enumword"
	"github.com/jaco-project/jaco/api/ipam"
	"github.com/jaco-project/jaco/client"
)

func clusterCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{Use: "cluster", Short: "Create and inspect the cluster"}
	cmd.AddCommand(clusterInitCmd(g), clusterStatusCmd(g), clusterUpdateCmd(g), unlockKeyCmd(g), clusterCACmd(g))
	return cmd
}

func clusterInitCmd(g *globals) *cobra.Command {
	var quiet bool
	var pool string
	cmd := &cobra.Command{
		Use:   "init",
		Short: "Make the local daemon the first manager of a new cluster",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return g.call(cmd.Context(), func(ctx context.Context, c *client.Client) error {
				resp, err := c.Cluster.Init(ctx, &api.InitClusterRequest{OverlayPool: pool})
				if err != nil {
					return err
				}
				out := cmd.OutOrStdout()
				if quiet {
					fmt.Fprintln(out, resp.OperatorToken)
					return nil
				}
				fmt.Fprintf(out, "Cluster %s initialized; this node (%s) is its first manager.\n\n", resp.ClusterId, resp.NodeId)
				fmt.Fprintf(out, "Operator token (shown only now; the cluster keeps just its hash):\n\n    %s\n\n", resp.OperatorToken)
				fmt.Fprintf(out, "Use it from another machine with:\n\n    JACO_TOKEN=<token> jaco --server <this-manager-address> cluster status\n")
				return nil
			})
		},
	}
	cmd.Flags().BoolVarP(&quiet, "quiet", "q", false, "print only the operator token")
	cmd.Flags().Var(&checkedString{&pool, func(s string) error { _, err := ipam.ParsePool(s); return err }}, "overlay-pool",
		"IPv4 CIDR (/8 to /16) overlay networks take their subnets from, fixed for the cluster's life (default 10.0.0.0/8)")
	return cmd
}

// statusView is the JSON shape of `jaco cluster status --format json`.
type statusView struct {
	State     string `json:"state"`
	ClusterID string `json:"cluster_id"`
	NodeID    string `json:"node_id"`
	Leader    string `json:"leader"`
	// RaftTerm rises at every election.
	RaftTerm uint64 `json:"raft_term"`
	// QuorumLost: this manager has been leaderless past the window.
	QuorumLost bool         `json:"quorum_lost"`
	Members    []memberView `json:"members"`
	// FailedUnlockAttempts counts wrong unlock keys since jacod started.
	FailedUnlockAttempts uint32 `json:"failed_unlock_attempts"`
	// CAFingerprint is the CA that signs now; CARotation a rotation's
	// progress, nil when none is under way (docs/adr/0041).
	CAFingerprint string        `json:"ca_fingerprint,omitempty"`
	CARotation    *rotationView `json:"ca_rotation,omitempty"`
	// Backups is the scheduled backups' setting and outcome (absent: never set).
	Backups *backupView `json:"backups,omitempty"`
}

type memberView struct {
	NodeID   string `json:"node_id"`
	Hostname string `json:"hostname"`
	Address  string `json:"address"`
	RaftID   string `json:"raft_id"`
	Status   string `json:"status"`
	Suffrage string `json:"suffrage"`
	Leader   bool   `json:"leader"`
}

func clusterStatusCmd(g *globals) *cobra.Command {
	var format string
	cmd := &cobra.Command{
		Use:   "status",
		Short: "Show the daemon's state, the cluster, its leader and its members",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkFormat(format); err != nil {
				return err
			}
			return g.call(cmd.Context(), func(ctx context.Context, c *client.Client) error {
				resp, err := c.Cluster.Status(ctx, &api.ClusterStatusRequest{})
				if err != nil {
					return err
				}
				v := toStatusView(resp)
				if ok, err := writeAs(cmd.OutOrStdout(), format, v); ok {
					return err
				}
				if err := printStatus(cmd, v); err != nil {
					return err
				}
				printBackupStatus(cmd.OutOrStdout(), v.Backups, resp.BackupSchedule)
				return nil
			})
		},
	}
	formatFlag(cmd, &format)
	return cmd
}

func toStatusView(resp *api.ClusterStatusResponse) statusView {
	v := statusView{
		State:      enumword.Of(resp.State),
		ClusterID:  resp.ClusterId,
		NodeID:     resp.NodeId,
		Leader:     resp.LeaderNodeId,
		RaftTerm:   resp.RaftTerm,
		QuorumLost: resp.QuorumLost,
		Members:    []memberView{},

		FailedUnlockAttempts: resp.FailedUnlockAttempts,
		CAFingerprint:        resp.CaFingerprint,
		CARotation:           toRotationView(resp.CaRotation),
		Backups:              toBackupView(resp),
	}
	members := slices.Clone(resp.Members)
	slices.SortFunc(members, func(a, b *api.Member) int { return strings.Compare(a.Hostname, b.Hostname) })
	for _, m := range members {
		v.Members = append(v.Members, memberView{
			NodeID:   m.NodeId,
			Hostname: m.Hostname,
			Address:  m.Address,
			RaftID:   fmt.Sprintf("%x", m.RaftId),
			Status:   strings.TrimPrefix(m.Status.String(), "MEMBER_STATUS_"),
			Suffrage: strings.TrimPrefix(m.Suffrage.String(), "SUFFRAGE_"),
			Leader:   m.Leader,
		})
	}
	return v
}

func printStatus(cmd *cobra.Command, v statusView) error {
	out := cmd.OutOrStdout()
	fmt.Fprintf(out, "State:       %s\n", v.State)
	if v.State == "locked" {
		fmt.Fprintf(out, "             autolock is on and jacod restarted: run 'jaco node unlock' here (failed unlock attempts: %d)\n", v.FailedUnlockAttempts)
	}
	if v.ClusterID == "" {
		return nil
	}
	leader := "none (no leader elected)"
	for _, m := range v.Members {
		if m.Leader {
			leader = terminalSafe(fmt.Sprintf("%s (%s)", m.Hostname, m.NodeID))
		}
	}
	fmt.Fprintf(out, "Cluster ID:  %s\nNode ID:     %s\nLeader:      %s\nRaft term:   %d (it rises at every election)\n", v.ClusterID, v.NodeID, leader, v.RaftTerm)
	if v.QuorumLost {
		fmt.Fprintln(out, "Quorum:      LOST (quorum_lost): this manager cannot reach a majority; writes through it fail")
	}
	if v.CARotation != nil {
		fmt.Fprintf(out, "CA rotation: %s\n", rotationLine(v.CARotation))
	}
	fmt.Fprintln(out, "Members:")
	rows := make([][]string, 0, len(v.Members))
	for _, m := range v.Members {
		status := strings.ReplaceAll(m.Status, "UNSPECIFIED", "UNKNOWN")
		membership := fmt.Sprintf("[%s, %s]", status, m.Suffrage)
		if m.Leader {
			membership += " leader"
		}
		rows = append(rows, []string{"  " + m.Hostname, m.NodeID, m.Address, membership})
	}
	return table(out, "  HOSTNAME\tNODE ID\tADDRESS\tMEMBERSHIP", rows)
}
