package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/client"
	"github.com/jaco-project/jaco/internal/durable"
	"github.com/jaco-project/jaco/internal/secretinput"
	"github.com/jaco-project/jaco/manager/backup/backupfile"
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
				key, err = secretinput.BackupKey(cmd.InOrStdin(), cmd.ErrOrStderr())
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
