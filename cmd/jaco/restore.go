package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/spf13/cobra"
)

// restoreCmd runs `jacod restore` with the same arguments: writing a
// stopped node's raft state takes raft and its storage, which the daemon
// links and the CLI does not. Stdin, stdout and stderr pass through (the
// backup key prompt is jacod's), and jacod's exit status is jaco's.
func restoreCmd(g *globals) *cobra.Command {
	var nodeName, advertise string
	cmd := &cobra.Command{
		Use:   "restore FILE --data-dir DIR --advertise-addr HOST:PORT [--node-name NAME]",
		Short: "Turn a backup into the data dir of a stopped node, the sole manager of the restored cluster",
		Long: `Restore a backup, offline, into the empty data dir of a stopped node: this
runs jacod restore with the same arguments (the jacod next to jaco, or else
the one in PATH), which says more in jacod restore --help.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			bin, err := jacodPath()
			if err != nil {
				return failure{err}
			}
			argv := []string{"restore", "--data-dir", g.dataDir}
			if advertise != "" {
				argv = append(argv, "--advertise-addr", advertise)
			}
			if nodeName != "" {
				argv = append(argv, "--node-name", nodeName)
			}
			// After "--" a FILE that starts with a dash is still a file.
			argv = append(argv, "--", args[0])
			c := exec.Command(bin, argv...)
			c.Stdin, c.Stdout, c.Stderr = cmd.InOrStdin(), cmd.OutOrStdout(), cmd.ErrOrStderr()
			err = c.Run()
			var exit *exec.ExitError
			if errors.As(err, &exit) && exit.ExitCode() > 0 {
				return exitStatus(exit.ExitCode()) // jacod said why
			}
			if err != nil {
				return failure{fmt.Errorf("run %s restore: %w", bin, err)}
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&nodeName, "node-name", "", "this node's name in the cluster (default: the hostname); a node of that name in the backup becomes this node")
	f.StringVar(&advertise, "advertise-addr", "", "HOST:PORT other nodes will dial this node at")
	return cmd
}

// jacodPath is the jacod that restores: the one installed next to this
// jaco first, as the two ship together, else the one in PATH.
func jacodPath() (string, error) {
	beside := "(where jaco is could not be told)"
	if self, err := os.Executable(); err == nil {
		beside = filepath.Join(filepath.Dir(self), "jacod")
		if st, err := os.Stat(beside); err == nil && st.Mode().IsRegular() && st.Mode().Perm()&0o111 != 0 {
			return beside, nil
		}
	}
	if p, err := exec.LookPath("jacod"); err == nil {
		return p, nil
	}
	return "", fmt.Errorf("jaco restore runs jacod restore, and there is no jacod next to jaco (%s) nor in PATH", beside)
}
