// Command jaco-dev is a developer's tool for trying jaco on one machine
// without a registry or a system containerd: it builds the demo image and
// runs a private containerd. Nothing here is part of the product.
//
//	jaco-dev image build -o FILE [--ref REF]   write the demo image archive
//	jaco-dev containerd --dir DIR              run a private containerd
package main

import (
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	root := &cobra.Command{
		Use:           "jaco-dev",
		Short:         "Developer tools for trying jaco on one machine",
		SilenceErrors: true,
		SilenceUsage:  true,
	}
	root.AddCommand(imageCmd(), containerdCmd())
	root.SetArgs(args)
	root.SetOut(stdout)
	root.SetErr(stderr)
	if err := root.Execute(); err != nil {
		fmt.Fprintf(stderr, "error: %v\n", err)
		return 1
	}
	return 0
}
