package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/jaco-project/jaco/client"
)

// rmCmd is an `rm NAME...` command: each name is removed in a call of its
// own, printed once removed; a refusal does not stop the others, and the
// command fails with every refusal.
func rmCmd(g *globals, use, short string, remove func(ctx context.Context, c *client.Client, name string) error) *cobra.Command {
	return &cobra.Command{
		Use:     use,
		Aliases: []string{"remove"},
		Short:   short,
		Args:    cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var errs []error
			for _, name := range args {
				err := g.call(cmd.Context(), func(ctx context.Context, c *client.Client) error {
					return remove(ctx, c, name)
				})
				if err != nil {
					errs = append(errs, err)
					continue
				}
				fmt.Fprintln(cmd.OutOrStdout(), name)
			}
			return errors.Join(errs...)
		},
	}
}
