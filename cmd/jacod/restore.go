package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/jaco-project/jaco/internal/secretinput"
	"github.com/jaco-project/jaco/manager/backup/backupfile"
	"github.com/jaco-project/jaco/manager/backup/restore"
	"github.com/jaco-project/jaco/node"
)

// restoreCmd writes a stopped node's raft state from a backup. It lives in
// the daemon, which links raft and its storage anyway; `jaco restore` runs
// it, so the CLI links neither.
func restoreCmd() *cobra.Command {
	var dataDir, nodeName, advertise string
	cmd := &cobra.Command{
		Use:   "restore FILE --data-dir DIR --advertise-addr HOST:PORT [--node-name NAME]",
		Short: "Turn a backup into the data dir of a stopped node, the sole manager of the restored cluster",
		Long: `Restore a backup, offline, into the empty data dir of a stopped node. The
backup key is read from stdin, or asked for when stdin is a terminal. Start
jacod on DIR afterwards (listening at --advertise-addr): it elects itself
and serves everything the backup holds. The old cluster's managers are
not members; start other managers empty and join them with tokens.
jaco restore runs this command.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if advertise == "" {
				return errors.New("--advertise-addr is required: the address other nodes will dial")
			}
			if nodeName == "" {
				h, err := os.Hostname()
				if err != nil {
					return fmt.Errorf("no --node-name and no hostname: %w", err)
				}
				nodeName = h
			}
			file, err := os.ReadFile(args[0])
			if err != nil {
				return runError{fmt.Errorf("read backup: %w", err)}
			}
			key, err := secretinput.BackupKey(cmd.InOrStdin(), cmd.ErrOrStderr())
			if err != nil {
				return runError{err}
			}
			b, err := backupfile.Decode(file, key)
			if err != nil {
				return runError{fmt.Errorf("%s: %w", args[0], err)}
			}
			dir, err := filepath.Abs(dataDir)
			if err != nil {
				return runError{err}
			}
			res, err := restore.Restore(b, restore.Options{DataDir: dir, NodeName: nodeName, AdvertiseAddr: advertise})
			if err != nil {
				return runError{err}
			}
			w := cmd.OutOrStdout()
			fmt.Fprintf(w, "Cluster %s restored into %s at raft index %d (term %d, backed up %s).\n",
				res.ClusterID, dir, res.Index, res.Term, b.TakenAt.Format("2006-01-02 15:04:05 MST"))
			fmt.Fprintf(w, "This node is %s (%s), sole manager, raft id %x, at %s.\n", res.NodeID, nodeName, res.RaftID, advertise)
			fmt.Fprintf(w, "The old cluster's %d raft members are refused from now on; start other managers empty and join them with tokens.\n", len(res.Blacklisted))
			fmt.Fprintf(w, "Start it with: jacod --data-dir %s --node-name %s --advertise-addr %s\n", dir, nodeName, advertise)
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&dataDir, "data-dir", envOr("JACO_DATA_DIR", node.DefaultDataDir), "the stopped node's data dir, empty or absent ($JACO_DATA_DIR)")
	f.StringVar(&nodeName, "node-name", "", "this node's name in the cluster (default: the hostname); a node of that name in the backup becomes this node")
	f.StringVar(&advertise, "advertise-addr", "", "HOST:PORT other nodes will dial this node at")
	return cmd
}
