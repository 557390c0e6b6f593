package main

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/client"
)

func dashboardCmd(g *globals) *cobra.Command {
	var quiet bool
	cmd := &cobra.Command{
		Use:   "dashboard",
		Short: "Print a one-time login link to the local daemon's web dashboard",
		Long: "Print a one-time login link to the web dashboard of the daemon on this machine (started with\n" +
			"--dashboard-addr). Asked over the local socket, whose user is the trusted admin: the link signs\n" +
			"a browser in once, within a minute, without the operator token. Elsewhere, sign in at the\n" +
			"dashboard's address with the operator token. The dashboard listens on loopback only: from\n" +
			"another machine, reach it through an SSH tunnel (ssh -L PORT:127.0.0.1:PORT HOST).",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return g.call(cmd.Context(), func(ctx context.Context, c *client.Client) error {
				resp, err := c.Node.DashboardLogin(ctx, &api.DashboardLoginRequest{})
				if err != nil {
					return err
				}
				out := cmd.OutOrStdout()
				if quiet {
					fmt.Fprintln(out, resp.Url)
					return nil
				}
				left := int(time.Until(resp.ExpiresAt.AsTime()).Round(time.Second) / time.Second)
				fmt.Fprintf(out, "Dashboard: %s\n\nOpen this link within %d s to sign in (it works once):\n\n    %s\n", resp.Address, left, resp.Url)
				return nil
			})
		},
	}
	cmd.Flags().BoolVarP(&quiet, "quiet", "q", false, "print only the login link")
	return cmd
}
