package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/jaco-project/jaco/internal/buildinfo"
)

// versionCmd is `jacod version`, the same as `jacod --version`.
func versionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version, commit and Go version of this jacod",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, err := fmt.Fprint(cmd.OutOrStdout(), buildinfo.Read().Format("jacod"))
			return err
		},
	}
}
