package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/client"
	"github.com/jaco-project/jaco/internal/durable"
	"github.com/jaco-project/jaco/manager/backup/backupfile"
	"github.com/jaco-project/jaco/manager/backup/restore"
)

func backupCmd(g *globals) *cobra.Command {
	var out string
	var quiet, keyStdin bool
	cmd := &cobra.Command{
		Use:   "backup -o FILE",
		Short: "Write a sealed backup of the whole cluster state, taken on the leader",
		Long: `Write a backup of the cluster's replicated state (everything the managers
store: nodes, services, tokens, the cluster CA) as the leader holds it after
every write acknowledged before the call. The file is sealed with a backup
key that is printed once; keep it apart from the file: without it the backup
cannot be restored, and with it the file opens the cluster CA.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if out == "" {
				return errors.New("-o FILE is required")
			}
			if _, err := os.Lstat(out); err == nil {
				return failure{fmt.Errorf("%s already exists; backups never overwrite a file", out)}
			}
			var key backupfile.Key
			var err error
			if keyStdin {
				key, err = readKey(cmd.InOrStdin(), cmd.ErrOrStderr())
			} else {
				key, err = backupfile.NewKey()
			}
			if err != nil {
				return failure{err}
			}
			payload, err := fetchBackup(cmd.Context(), g)
			if err != nil {
				return err // a failure already (g.call)
			}
			b, err := backupfile.Unmarshal(payload)
			if err != nil {
				return failure{fmt.Errorf("the leader sent an unusable backup: %w", err)}
			}
			sealed, err := backupfile.Seal(payload, key)
			if err != nil {
				return failure{err}
			}
			if err := durable.WriteFile(out, sealed, 0o600); err != nil {
				return failure{fmt.Errorf("write backup: %w", err)}
			}
			w := cmd.OutOrStdout()
			if quiet || keyStdin {
				if !keyStdin {
					fmt.Fprintln(w, key)
				}
				return nil
			}
			fmt.Fprintf(w, "Backup of cluster %s at raft index %d written to %s (%d bytes).\n\n", b.ClusterID, b.Index, out, len(sealed))
			fmt.Fprintf(w, "Backup key (shown only now; keep it apart from the file; restore reads it from stdin or a prompt):\n\n    %s\n", key)
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVarP(&out, "output", "o", "", "file to write (must not exist)")
	f.BoolVarP(&quiet, "quiet", "q", false, "print only the backup key")
	f.BoolVar(&keyStdin, "key-stdin", false, "seal with a backup key read from stdin (one you keep already) instead of a new one")
	return cmd
}

// fetchBackup streams the leader's backup through the daemon the globals
// name; any manager forwards to the leader.
func fetchBackup(ctx context.Context, g *globals) ([]byte, error) {
	var data []byte
	err := g.call(ctx, func(ctx context.Context, c *client.Client) error {
		stream, err := c.Backup.Backup(ctx, &api.BackupRequest{})
		if err != nil {
			return err
		}
		for {
			chunk, err := stream.Recv()
			if errors.Is(err, io.EOF) {
				return nil
			}
			if err != nil {
				return err
			}
			data = append(data, chunk.Data...)
		}
	})
	return data, err
}

func restoreCmd(g *globals) *cobra.Command {
	var nodeName, advertise string
	cmd := &cobra.Command{
		Use:   "restore FILE --data-dir DIR --advertise-addr HOST:PORT [--node-name NAME]",
		Short: "Turn a backup into the data dir of a stopped node, the sole manager of the restored cluster",
		Long: `Restore a backup, offline, into the empty data dir of a stopped node. The
backup key is read from stdin, or asked for when stdin is a terminal. Start
jacod on DIR afterwards (listening at --advertise-addr): it elects itself
and serves everything the backup holds. The old cluster's managers are
not members; start other managers empty and join them with tokens.`,
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
				return failure{fmt.Errorf("read backup: %w", err)}
			}
			key, err := readKey(cmd.InOrStdin(), cmd.ErrOrStderr())
			if err != nil {
				return failure{err}
			}
			b, err := backupfile.Decode(file, key)
			if err != nil {
				return failure{fmt.Errorf("%s: %w", args[0], err)}
			}
			dir, err := filepath.Abs(g.dataDir)
			if err != nil {
				return failure{err}
			}
			res, err := restore.Restore(b, restore.Options{DataDir: dir, NodeName: nodeName, AdvertiseAddr: advertise})
			if err != nil {
				return failure{err}
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
	f.StringVar(&nodeName, "node-name", "", "this node's name in the cluster (default: the hostname); a node of that name in the backup becomes this node")
	f.StringVar(&advertise, "advertise-addr", "", "HOST:PORT other nodes will dial this node at")
	return cmd
}

// readKey reads a backup key from r (readSecret). Never from a flag,
// which would land in shell history and process listings.
func readKey(r io.Reader, prompt io.Writer) (backupfile.Key, error) {
	line, err := readSecret(r, prompt, "Backup key: ")
	if err != nil && !errors.Is(err, io.EOF) {
		return backupfile.Key{}, fmt.Errorf("read backup key: %w", err)
	}
	if line == "" {
		return backupfile.Key{}, errors.New("no backup key on stdin (give the key printed by jaco backup)")
	}
	return backupfile.ParseKey(line)
}
