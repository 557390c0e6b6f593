package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/jaco-project/jaco/internal/buildinfo"
)

// versionCmd is `jaco version`; `jaco --version` prints the same through
// cobra's version flag (run sets the root's Version).
func versionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version, commit and Go version of this jaco",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, err := fmt.Fprint(cmd.OutOrStdout(), buildinfo.Read().Format("jaco"))
			return err
		},
	}
}
