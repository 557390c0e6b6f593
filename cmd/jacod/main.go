// Command jacod is the jaco daemon: one binary for every role.
package main

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"strconv"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/jaco-project/jaco/node"
)

func main() {
	os.Exit(run(os.Args[1:]))
}

func run(args []string) int {
	var (
		cfg      node.Config
		logLevel string
	)
	cmd := &cobra.Command{
		Use:           "jacod",
		Short:         "The jaco daemon",
		Args:          cobra.NoArgs,
		SilenceErrors: true,
		SilenceUsage:  true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var level slog.Level
			if err := level.UnmarshalText([]byte(logLevel)); err != nil {
				return usageError{fmt.Errorf("--log-level: %w", err)}
			}
			cfg.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGINT, syscall.SIGTERM)
			defer stop()
			n, err := node.New(cfg)
			if err != nil {
				return runError{err}
			}
			if err := n.Run(ctx); err != nil {
				return runError{err}
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&cfg.DataDir, "data-dir", envOr("JACO_DATA_DIR", node.DefaultDataDir), "where the node keeps its state ($JACO_DATA_DIR)")
	f.StringVar(&cfg.ListenAddr, "listen-addr", envOr("JACO_LISTEN_ADDR", node.DefaultListenAddr), "TCP address for every gRPC service ($JACO_LISTEN_ADDR)")
	f.StringVar(&cfg.AdvertiseAddr, "advertise-addr", os.Getenv("JACO_ADVERTISE_ADDR"), "address other nodes dial; default derived from --listen-addr ($JACO_ADVERTISE_ADDR)")
	f.StringVar(&cfg.NodeName, "node-name", os.Getenv("JACO_NODE_NAME"), "this node's name in the cluster; default the hostname ($JACO_NODE_NAME)")
	f.StringVar(&logLevel, "log-level", envOr("JACO_LOG_LEVEL", "info"), "debug, info, warn or error ($JACO_LOG_LEVEL)")
	f.Uint64Var(&cfg.SnapshotInterval, "snapshot-interval", envUint("JACO_SNAPSHOT_INTERVAL", 0), "applied raft entries between snapshots; 0 for the default 10000 ($JACO_SNAPSHOT_INTERVAL)")
	cmd.SetArgs(args)
	err := cmd.Execute()
	if err == nil {
		return 0
	}
	var re runError
	switch {
	case !errors.As(err, &re), errors.Is(err, node.ErrInvalidConfig):
		// Flags, arguments, and values the daemon refused to start with.
		fmt.Fprintf(os.Stderr, "jacod: error: usage: %v\n", err)
		return 2
	case errors.Is(err, node.ErrDataDirInUse):
		fmt.Fprintf(os.Stderr, "jacod: error: data_dir_in_use: %v\n", err)
	case errors.Is(err, node.ErrRemoved):
		fmt.Fprintf(os.Stderr, "jacod: error: node_removed: %v\n", err)
	default:
		fmt.Fprintf(os.Stderr, "jacod: error: failed: %v\n", err)
	}
	return 1
}

// runError is a failure of the daemon itself, as opposed to its usage.
type runError struct{ error }

func (e runError) Unwrap() error { return e.error }

// usageError is a bad flag value found before the daemon starts.
type usageError struct{ error }

func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}

func envUint(key string, def uint64) uint64 {
	if v, err := strconv.ParseUint(os.Getenv(key), 10, 64); err == nil {
		return v
	}
	return def
}
