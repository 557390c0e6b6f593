package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/spf13/cobra"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/client"
)

func serviceLogsCmd(g *globals) *cobra.Command {
	var (
		follow     bool
		tail       int64
		since      sinceValue
		timestamps bool
	)
	cmd := &cobra.Command{
		Use:   "logs SERVICE",
		Short: "Print the logs of a service's replicas, ended ones included, fetched from their nodes",
		Long: "Print the logs of a service's replicas, fetched from their nodes. Each line is prefixed\n" +
			"NAME.SLOT@NODE (NAME@NODE for a global service). The logs of replicas that ended are kept by\n" +
			"their node (the last few per slot), so a crash-looping service shows why it crashed.",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			call := g.call
			if follow {
				call = g.stream
			}
			req := &api.ServiceLogsRequest{Service: args[0], Follow: follow, Tail: tail}
			if !since.t.IsZero() {
				req.Since = timestamppb.New(since.t)
			}
			return call(cmd.Context(), func(ctx context.Context, c *client.Client) error {
				logs, err := c.Control.ServiceLogs(ctx, req)
				if err != nil {
					return err
				}
				return copyLogs(cmd.OutOrStdout(), cmd.ErrOrStderr(), timestamps, logs.Recv)
			})
		},
	}
	cmd.Flags().BoolVarP(&follow, "follow", "f", false, "keep printing new lines")
	cmd.Flags().Int64Var(&tail, "tail", 0, "lines from before the call per replica (0: all)")
	cmd.Flags().Var(&since, "since", "leave out lines written before this: a duration back from now (10m, 1h30m) or a time (2026-11-25T06:00:00Z)")
	cmd.Flags().BoolVarP(&timestamps, "timestamps", "t", false, "print the time each line was written down (RFC 3339, UTC) before it")
	return cmd
}

// sinceValue is --since: a time, or a duration back from when the flag
// is read.
type sinceValue struct {
	text string
	t    time.Time
}

func (v *sinceValue) String() string { return v.text }
func (v *sinceValue) Type() string   { return "time" }

func (v *sinceValue) Set(s string) error {
	if d, err := time.ParseDuration(s); err == nil && d >= 0 {
		v.text, v.t = s, time.Now().Add(-d)
		return nil
	}
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05", "2006-01-02"} {
		if t, err := time.Parse(layout, s); err == nil {
			v.text, v.t = s, t
			return nil
		}
	}
	return fmt.Errorf("want a duration back from now such as 10m, or a time such as 2026-11-25T06:00:00Z")
}

// copyLogs prints each replica line prefixed NAME.SLOT@NODE (and its
// time with timestamps); the manager's own notes (a node that could not
// be asked) go to errw.
func copyLogs(w, errw io.Writer, timestamps bool, recv func() (*api.LogsMessage, error)) error {
	for {
		m, err := recv()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		for _, l := range m.Lines {
			out := w
			if l.TaskId == "" {
				out = errw
			} else {
				if timestamps && l.Time != nil {
					fmt.Fprintf(w, "%s ", l.Time.AsTime().UTC().Format(time.RFC3339Nano))
				}
				fmt.Fprintf(w, "%s | ", terminalSafe(replicaLabel(l)))
			}
			out.Write(l.Data)
			if n := len(l.Data); n == 0 || l.Data[n-1] != '\n' {
				fmt.Fprintln(out)
			}
		}
	}
}

// replicaLabel names a line's replica NAME.SLOT@NODE, NAME@NODE for a
// global one; the short task id stands in for what the manager did not
// fill in.
func replicaLabel(l *api.LogLine) string {
	id := l.TaskId
	if len(id) > 12 {
		id = id[:12]
	}
	name := l.ServiceName
	switch {
	case name == "":
		name = id
	case l.Slot > 0:
		name = fmt.Sprintf("%s.%d", name, l.Slot)
	}
	node := l.NodeName
	if node == "" {
		node = l.NodeId
	}
	if node == "" {
		return name
	}
	return name + "@" + node
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
