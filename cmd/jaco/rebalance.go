package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/client"
)

func serviceRebalanceCmd(g *globals) *cobra.Command {
	var all bool
	var wf waitFlags
	cmd := &cobra.Command{
		Use:   "rebalance SERVICE | --all",
		Short: "Move the fewest replicas needed to spread a service evenly over its nodes",
		Long: "Move replicas so that the nodes that may run the service hold them evenly (each n/k, or one\n" +
			"more), moving as few as that takes, under the service's update policy: start-first keeps each\n" +
			"replica until its successor runs elsewhere; parallelism and delay apply. --all asks it of every\n" +
			"replicated service, leaving out those whose update is rolling or paused.\n\n" +
			"The command waits until every rebalance has completed, printing each change; -d does not wait.",
		Args: func(cmd *cobra.Command, args []string) error {
			if all == (len(args) == 1) || len(args) > 1 {
				return errors.New("name one service, or give --all")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			req := &api.RebalanceServiceRequest{All: all}
			if !all {
				req.Service = args[0]
			}
			return g.call(cmd.Context(), func(ctx context.Context, c *client.Client) error {
				resp, err := c.Control.RebalanceService(ctx, req)
				if err != nil {
					return err // asking again plans the rebalance afresh: no harm
				}
				out := cmd.OutOrStdout()
				for _, s := range resp.Skipped {
					fmt.Fprintf(cmd.ErrOrStderr(), "skipped %s\n", s)
				}
				if all && !wf.quiet {
					fmt.Fprintf(out, "Rebalancing %d services.\n", len(resp.Services))
				}
				if wf.detach {
					return nil
				}
				w := out
				if wf.quiet {
					w = io.Discard
				}
				for _, svc := range resp.Services {
					if err := waitRebalanced(ctx, c.Control, svc, w, g.timeout); err != nil {
						return err
					}
				}
				return nil
			})
		},
	}
	cmd.Flags().BoolVar(&all, "all", false, "rebalance every replicated service")
	wf.register(cmd)
	return cmd
}

// waitRebalanced follows svc until the rebalance asked for it (the one
// requested at svc's requested_at, or a later one) has completed,
// printing each new message.
func waitRebalanced(ctx context.Context, c api.ControlServiceClient, svc *api.Service, w io.Writer, retryFor time.Duration) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	asked := svc.GetRebalance().GetRequestedAt().AsTime()
	msgs := make(chan *api.WatchServiceMessage)
	errc := make(chan error, 1)
	go func() { errc <- watchService(ctx, c, svc.Id, msgs, retryFor) }()
	name, last := svc.GetSpec().GetName(), ""
	for {
		select {
		case m := <-msgs:
			if m.Removed {
				return fmt.Errorf("service %s was removed while it was rebalancing", name)
			}
			rb := m.GetService().GetRebalance()
			if rb.GetRequestedAt().AsTime().Before(asked) {
				continue // a manager that has not applied the request yet
			}
			if rb.GetMessage() != last {
				last = rb.GetMessage()
				fmt.Fprintf(w, "%s: %s\n", name, terminalSafe(last))
			}
			if rb.GetState() == api.RebalanceState_REBALANCE_STATE_COMPLETED {
				return nil
			}
		case err := <-errc:
			return err
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}
