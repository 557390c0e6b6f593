package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/api/enumword"
	"github.com/jaco-project/jaco/api/limits"
	"github.com/jaco-project/jaco/client"
	"github.com/jaco-project/jaco/internal/secretinput"
)

func clusterUpdateCmd(g *globals) *cobra.Command {
	var autolock, quiet, rebalanceOnJoin bool
	var maxReplicas, maxServices uint64
	var partitionGrace, downGrace time.Duration
	var backups backupFlags
	cmd := &cobra.Command{
		Use: "update [--autolock=true|false] [--max-replicas-per-service N] [--max-services N] [--rebalance-on-join=true|false]" +
			" [--partition-grace D] [--down-grace D] [--backup-interval D --backup-dir DIR --backup-keep N]",
		Short: "Change cluster-wide settings (autolock, limits, rebalancing, graces, scheduled backups)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			req := &api.UpdateClusterRequest{}
			if cmd.Flags().Changed("autolock") {
				req.Autolock = &autolock
			}
			if cmd.Flags().Changed("max-replicas-per-service") {
				req.MaxReplicasPerService = &maxReplicas
			}
			if cmd.Flags().Changed("max-services") {
				req.MaxServices = &maxServices
			}
			if cmd.Flags().Changed("rebalance-on-join") {
				req.RebalanceOnJoin = &rebalanceOnJoin
			}
			if cmd.Flags().Changed("partition-grace") {
				req.PartitionGrace = durationpb.New(partitionGrace)
			}
			if cmd.Flags().Changed("down-grace") {
				req.DownGrace = durationpb.New(downGrace)
			}
			if err := backups.apply(cmd, req); err != nil {
				return err
			}
			if req.Autolock == nil && req.MaxReplicasPerService == nil && req.MaxServices == nil && req.RebalanceOnJoin == nil &&
				req.PartitionGrace == nil && req.DownGrace == nil && !asksBackups(req) {
				return errors.New("nothing to change: give --autolock=true|false, --max-replicas-per-service N, --max-services N, " +
					"--rebalance-on-join=true|false, --partition-grace D, --down-grace D or --backup-interval D")
			}
			return g.call(cmd.Context(), func(ctx context.Context, c *client.Client) error {
				resp, err := c.Control.UpdateCluster(ctx, req)
				if err != nil {
					return err
				}
				out := cmd.OutOrStdout()
				if req.Autolock != nil {
					printUnlockKey(out, resp, quiet)
				}
				if req.MaxReplicasPerService != nil && !quiet {
					fmt.Fprintf(out, "Max replicas per service: %d.\n", resp.MaxReplicasPerService)
				}
				if req.MaxServices != nil && !quiet {
					fmt.Fprintf(out, "Max services: %d.\n", resp.MaxServices)
				}
				if req.RebalanceOnJoin != nil && !quiet {
					fmt.Fprintf(out, "Rebalance on join: %t.\n", resp.RebalanceOnJoin)
				}
				if (req.PartitionGrace != nil || req.DownGrace != nil) && !quiet {
					fmt.Fprintf(out, "Partition grace: %s; down grace: %s.\n",
						resp.GetPartitionGrace().AsDuration(), resp.GetDownGrace().AsDuration())
				}
				if asksBackups(req) {
					backups.print(out, resp, quiet)
				}
				return nil
			})
		},
	}
	cmd.Flags().DurationVar(&partitionGrace, "partition-grace", api.DefaultPartitionGrace,
		"how long the replicas of a node cut off from the managers, but heard by its monitors, keep their slots before they are replaced (0 to 24h)")
	cmd.Flags().DurationVar(&downGrace, "down-grace", api.DefaultDownGrace,
		"how long the replicas of a node nobody hears keep their slots before they are replaced, after the heartbeat grace (0 to 24h)")
	cmd.Flags().BoolVar(&rebalanceOnJoin, "rebalance-on-join", false,
		"rebalance every replicated service when a node joins or returns (jaco service rebalance --all, by itself)")
	cmd.Flags().BoolVar(&autolock, "autolock", false, "seal every manager's keys with an unlock key; a restarted manager waits for 'jaco node unlock'")
	cmd.Flags().Uint64Var(&maxReplicas, "max-replicas-per-service", 0,
		fmt.Sprintf("the most replicas a service create or update may ask for, 1 to %d (a new cluster's: %d); services above it keep theirs but cannot grow",
			limits.MaxReplicasCeiling, limits.DefaultMaxReplicasPerService))
	cmd.Flags().Uint64Var(&maxServices, "max-services", 0,
		fmt.Sprintf("the most services the cluster may hold, 1 to %d (a new cluster's: %d); lowering it removes none, only creating more is refused",
			limits.MaxServicesCeiling, limits.DefaultMaxServices))
	backups.register(cmd)
	cmd.Flags().BoolVarP(&quiet, "quiet", "q", false, "print only a new unlock key or backup key")
	return cmd
}

func unlockKeyCmd(g *globals) *cobra.Command {
	var rotate, quiet bool
	cmd := &cobra.Command{
		Use:   "unlock-key [--rotate]",
		Short: "Show the cluster's unlock key, or replace it",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return g.call(cmd.Context(), func(ctx context.Context, c *client.Client) error {
				out := cmd.OutOrStdout()
				if rotate {
					resp, err := c.Control.UpdateCluster(ctx, &api.UpdateClusterRequest{RotateUnlockKey: true})
					if err != nil {
						return err
					}
					printUnlockKey(out, resp, quiet)
					return nil
				}
				resp, err := c.Control.GetUnlockKey(ctx, &api.GetUnlockKeyRequest{})
				if err != nil {
					return err
				}
				switch {
				case !resp.Autolock:
					fmt.Fprintln(out, "Autolock is off: there is no unlock key.")
				case quiet:
					fmt.Fprintln(out, resp.UnlockKey)
				default:
					fmt.Fprintf(out, "Unlock key:\n\n    %s\n\n", resp.UnlockKey)
					if resp.PreviousUnlockKey != "" {
						fmt.Fprintf(out, "Previous key (opens, once, a manager that was down when the key was rotated):\n\n    %s\n", resp.PreviousUnlockKey)
					}
				}
				return nil
			})
		},
	}
	cmd.Flags().BoolVar(&rotate, "rotate", false, "replace the unlock key; managers re-seal their keys with the new one")
	cmd.Flags().BoolVarP(&quiet, "quiet", "q", false, "print only the key")
	return cmd
}

func printUnlockKey(out io.Writer, resp *api.UpdateClusterResponse, quiet bool) {
	switch {
	case quiet:
		if resp.UnlockKey != "" {
			fmt.Fprintln(out, resp.UnlockKey)
		}
	case resp.UnlockKey != "":
		fmt.Fprintf(out, "Autolock is on. Unlock key (keep it where you keep secrets; a restarted manager needs it):\n\n    %s\n\n", resp.UnlockKey)
		fmt.Fprintln(out, "Unlock a restarted manager on its machine with: jaco node unlock")
	case resp.Autolock:
		fmt.Fprintln(out, "Autolock is on (unchanged). 'jaco cluster unlock-key' shows the key.")
	default:
		fmt.Fprintln(out, "Autolock is off: managers keep their keys in clear on disk.")
	}
}

func nodeUnlockCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "unlock",
		Short: "Give a locked manager the cluster unlock key (from a prompt, or from stdin when it is not a terminal)",
		Long: "Give a locked manager the cluster unlock key. The key is read from a prompt, or from stdin when it\n" +
			"is not a terminal, never from a flag (it would land in shell history and the process list).\n" +
			"It is sent over the local socket only.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			key, err := secretinput.Line(cmd.InOrStdin(), cmd.ErrOrStderr(), "Unlock key: ")
			if err != nil {
				return fmt.Errorf("read the unlock key: %w", err)
			}
			return g.call(cmd.Context(), func(ctx context.Context, c *client.Client) error {
				resp, err := c.Node.Unlock(ctx, &api.UnlockNodeRequest{UnlockKey: key})
				if err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "Unlocked; state %s.\n", enumword.Of(resp.State))
				return nil
			})
		},
	}
}
