package main

import (
	"fmt"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/jaco-project/jaco/internal/containerdtest"
)

func containerdCmd() *cobra.Command {
	var dir string
	cmd := &cobra.Command{
		Use:   "containerd --dir DIR",
		Short: "Run a private containerd under DIR until SIGINT or SIGTERM; its socket is the first line printed",
		Long: `Runs a private containerd whose root, state, config and log live under DIR
(its socket in a short directory under /tmp). The first line on stdout is
the socket address, for jacod --containerd-address. On SIGINT or SIGTERM
the daemon is stopped, with the shims and containers it left.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if dir == "" {
				return fmt.Errorf("give the directory with --dir")
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGINT, syscall.SIGTERM)
			defer stop()
			d, err := containerdtest.StartDaemon(ctx, dir)
			if err != nil {
				return err
			}
			fmt.Fprintln(cmd.OutOrStdout(), d.Address())
			<-ctx.Done()
			if err := d.Stop(); err != nil {
				return fmt.Errorf("stop containerd: %w (its log: %s)", err, d.LogPath())
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&dir, "dir", "", "directory for the daemon's root, state, config and log (required)")
	return cmd
}
