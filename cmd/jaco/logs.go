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
)

func serviceLogsCmd(g *globals) *cobra.Command {
	var follow bool
	var tail int64
	cmd := &cobra.Command{
		Use:   "logs SERVICE",
		Short: "Print the logs of a service's replicas, fetched from their nodes",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			call := g.call
			if follow {
				call = g.stream
			}
			return call(cmd.Context(), func(ctx context.Context, c *client.Client) error {
				logs, err := c.Control.ServiceLogs(ctx, &api.ServiceLogsRequest{Service: args[0], Follow: follow, Tail: tail})
				if err != nil {
					return err
				}
				return copyLogs(cmd.OutOrStdout(), logs.Recv)
			})
		},
	}
	cmd.Flags().BoolVarP(&follow, "follow", "f", false, "keep printing new lines")
	cmd.Flags().Int64Var(&tail, "tail", 0, "lines from before the call per replica (0: all)")
	return cmd
}

// copyLogs prints each line prefixed with its replica's short id.
func copyLogs(w io.Writer, recv func() (*api.LogsMessage, error)) error {
	for {
		m, err := recv()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		for _, l := range m.Lines {
			id := l.TaskId
			if len(id) > 12 {
				id = id[:12]
			}
			fmt.Fprintf(w, "%s | %s", id, l.Data)
			if n := len(l.Data); n == 0 || l.Data[n-1] != '\n' {
				fmt.Fprintln(w)
			}
		}
	}
}

func imageCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{Use: "image", Short: "Manage images on this node"}
	cmd.AddCommand(&cobra.Command{
		Use:   "load FILE",
		Short: "Load an OCI image archive into this node's image store",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			f, err := os.Open(args[0])
			if err != nil {
				return err
			}
			defer f.Close()
			return g.stream(cmd.Context(), func(ctx context.Context, c *client.Client) error {
				up, err := c.Agent.LoadImage(ctx)
				if err != nil {
					return err
				}
				buf := make([]byte, 1<<20)
				for {
					n, err := f.Read(buf)
					if n > 0 {
						if err := up.Send(&api.LoadImageRequest{Chunk: buf[:n]}); err != nil {
							return err
						}
					}
					if errors.Is(err, io.EOF) {
						break
					}
					if err != nil {
						return fmt.Errorf("read %s: %w", args[0], err)
					}
				}
				resp, err := up.CloseAndRecv()
				if err != nil {
					return err
				}
				for _, ref := range resp.Images {
					fmt.Fprintln(cmd.OutOrStdout(), ref)
				}
				return nil
			})
		},
	})
	return cmd
}
