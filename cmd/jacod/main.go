// Command jacod is the jaco daemon: one binary for every role.
package main

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/jaco-project/jaco/agent/exec/hooks"
	"github.com/jaco-project/jaco/internal/buildinfo"
	"github.com/jaco-project/jaco/internal/gcpace"
	"github.com/jaco-project/jaco/node"
)

func main() {
	// The hooks runtime runs this binary as the shim that parents a hook
	// replica's launch (hidden; no flags, no cobra).
	if len(os.Args) > 1 && os.Args[1] == hooks.ShimCommand {
		os.Exit(hooks.ShimMain(os.Args[2:]))
	}
	os.Exit(run(os.Args[1:]))
}

func run(args []string) int {
	var (
		cfg       node.Config
		logLevel  string
		logFormat string
		joinAddr  string
		overlayOn bool
		debugAddr string
		// gcHeadroomMiB is --gc-headroom, cfg.GCHeadroom in MiB.
		gcHeadroomMiB uint64
		// jsonLog is the daemon's logger once built with --log-format
		// json: the error jacod exits with is then a record too.
		jsonLog *slog.Logger
	)
	cmd := &cobra.Command{
		Use:           "jacod",
		Short:         "The jaco daemon",
		Args:          cobra.NoArgs,
		SilenceErrors: true,
		SilenceUsage:  true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			log, err := newLogger(os.Stderr, logFormat, logLevel)
			if err != nil {
				return usageError{err}
			}
			cfg.JoinAddrs = splitList(joinAddr)
			cfg.NoOverlay = !overlayOn
			cfg.GCHeadroom = gcHeadroomMiB << 20
			cfg.Logger = log
			if logFormat == "json" {
				jsonLog = log
			}
			// What logs through slog.Default (a package given no logger,
			// the offline replay of --force-new-cluster) keeps the format.
			slog.SetDefault(log)
			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGINT, syscall.SIGTERM)
			defer stop()
			if debugAddr != "" {
				_, stopDebug, err := serveDebug(debugAddr, cfg.Logger)
				if err != nil {
					return usageError{err}
				}
				defer stopDebug()
			}
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
	f.StringVar(&cfg.NodeName, "node-name", os.Getenv("JACO_NODE_NAME"), "this node's name in the cluster, an RFC 1123 host name; default the hostname ($JACO_NODE_NAME)")
	f.StringVar(&cfg.MetricsAddr, "metrics-addr", os.Getenv("JACO_METRICS_ADDR"), "serve Prometheus metrics (/metrics) on this HOST:PORT, off when empty ($JACO_METRICS_ADDR)")
	f.StringVar(&cfg.DashboardAddr, "dashboard-addr", os.Getenv("JACO_DASHBOARD_ADDR"), "serve the read-only web dashboard on this loopback HOST:PORT (plain HTTP; sign in with the operator token or 'jaco dashboard'), off when empty ($JACO_DASHBOARD_ADDR)")
	f.StringVar(&debugAddr, "debug-addr", os.Getenv("JACO_DEBUG_ADDR"), "serve Go profiles (/debug/pprof/) on this address, off when empty; bind it to loopback ($JACO_DEBUG_ADDR)")
	f.StringVar(&logLevel, "log-level", envOr("JACO_LOG_LEVEL", "info"), "debug, info, warn or error ($JACO_LOG_LEVEL)")
	f.StringVar(&logFormat, "log-format", envOr("JACO_LOG_FORMAT", "text"), "text (key=value) or json (one object a line) ($JACO_LOG_FORMAT)")
	f.Uint64Var(&cfg.SnapshotInterval, "snapshot-interval", envUint("JACO_SNAPSHOT_INTERVAL", 0), "applied raft entries between snapshots at least (past 1 MiB, also as many log bytes as the last snapshot); 0 for the default 10000 ($JACO_SNAPSHOT_INTERVAL)")
	f.Uint64Var(&gcHeadroomMiB, "gc-headroom", envUint("JACO_GC_HEADROOM", gcpace.DefaultHeadroom>>20), "MiB a manager's heap may grow by at least between garbage collections (or by as much as is live); 0 leaves it to GOGC, and GOGC set in the environment overrides it ($JACO_GC_HEADROOM)")
	f.StringVar(&cfg.VolumesDir, "volumes-dir", os.Getenv("JACO_VOLUMES_DIR"), "where the named volumes living on this node are kept; empty: DATA_DIR/volumes ($JACO_VOLUMES_DIR)")
	f.StringVar(&cfg.ContainerdAddress, "containerd-address", os.Getenv("JACO_CONTAINERD_ADDRESS"), "containerd socket for image services; empty runs hook bundles only ($JACO_CONTAINERD_ADDRESS)")
	f.StringVar(&cfg.ContainerSubnet, "container-subnet", os.Getenv("JACO_CONTAINER_SUBNET"), "CNI bridge subnet for this node's containers; default derived from the node id ($JACO_CONTAINER_SUBNET)")
	f.BoolVar(&overlayOn, "overlay", envOr("JACO_OVERLAY", "true") != "false", "join the encrypted overlay other nodes' replicas reach this node's over; off, the node runs no replica on a network ($JACO_OVERLAY)")
	f.IntVar(&cfg.OverlayPort, "overlay-port", 0, "UDP port of the overlay (WireGuard) link (0: 51871)")
	f.StringVar(&cfg.OverlayInterface, "overlay-interface", "", "name of the overlay link (default jaco0)")
	f.DurationVar(&cfg.HeartbeatPeriod, "heartbeat-period", 0, "agent heartbeat period this manager asks for while it leads; a node missing 3 is down (0: 5s)")
	f.DurationVar(&cfg.MinBackupInterval, "min-backup-interval", 0, "tests only: the shortest scheduled-backup interval this manager accepts while it leads (0: 1m)")
	_ = f.MarkHidden("min-backup-interval")
	f.DurationVar(&cfg.CertLifetime, "cert-lifetime", 0, "lifetime of the node certificates this manager signs while it leads; nodes renew at two thirds of it (0: 90 days)")
	f.DurationVar(&cfg.RoleCheckInterval, "role-check-interval", 0, "how often the node asks the leader for its role (promote / demote) and renews a certificate that is due (0: 2s)")
	f.BoolVar(&cfg.ForceNewCluster, "force-new-cluster", false, "for a majority of managers lost for good: restart this manager as the sole voter of its state, the other members removed for good; one-shot, remove it afterwards")
	// Formation without `jaco cluster init` (docs/operator-guide.md,
	// "Formation from flags").
	f.StringVar(&cfg.JoinSecretFile, "join-secret-file", os.Getenv("JACO_JOIN_SECRET_FILE"), "file (mode 0600) holding the cluster's join secret, at least 32 bytes, the same on every manager; managers started with it admit formation joins that prove it ($JACO_JOIN_SECRET_FILE)")
	f.BoolVar(&cfg.Bootstrap, "bootstrap", false, "ordinal formation (identical flags on every replica): --node-name must end in -N; ordinal 0 bootstraps the cluster when it has no state and no cluster answers at --join-addr, every replica joins through --join-addr until it is a voter at its advertise address")
	f.StringVar(&joinAddr, "join-addr", os.Getenv("JACO_JOIN_ADDR"), "with --bootstrap: host:port of the replicas (a name resolving to several addresses, e.g. a headless service) or a comma-separated list of host:port ($JACO_JOIN_ADDR)")
	f.StringVar(&cfg.InitialCluster, "initial-cluster", os.Getenv("JACO_INITIAL_CLUSTER"), "static formation: name=host:port,... of every manager, the same on each; each initializes the same cluster after --formation-delay; refused once the node has raft state ($JACO_INITIAL_CLUSTER)")
	f.DurationVar(&cfg.FormationDelay, "formation-delay", node.DefaultFormationDelay, "with --initial-cluster: how long to wait after start before initializing")
	// The daemon and its offline restore; no generated completion
	// command beside them.
	cmd.CompletionOptions.DisableDefaultCmd = true
	cmd.AddCommand(restoreCmd(), versionCmd())
	cmd.Version = buildinfo.Read().Format("jacod")
	cmd.SetVersionTemplate("{{.Version}}")
	cmd.SetArgs(args)
	err := cmd.Execute()
	if err == nil {
		return 0
	}
	word, code := "failed", 1
	var re runError
	switch {
	case !errors.As(err, &re), errors.Is(err, node.ErrInvalidConfig):
		// Flags, arguments, and values the daemon (or restore) refused
		// to start with.
		word, code = "usage", 2
	case errors.Is(err, node.ErrDataDirInUse):
		word = "data_dir_in_use"
	case errors.Is(err, node.ErrInitialClusterWithState):
		word = "already_initialized"
	case errors.Is(err, node.ErrRemoved):
		word = "node_removed"
	case errors.Is(err, node.ErrCertExpired):
		word = "certificate_expired"
	}
	if jsonLog != nil {
		// Every line on stderr stays JSON once the daemon logs in it.
		jsonLog.Error("jacod stopped", "reason", word, "err", err)
	} else {
		fmt.Fprintf(os.Stderr, "jacod: error: %s: %v\n", word, err)
	}
	return code
}

// runError is a failure of the daemon (or of restore) itself, as opposed
// to its usage.
type runError struct{ error }

func (e runError) Unwrap() error { return e.error }

// usageError is a bad flag value found before the daemon starts.
type usageError struct{ error }

// splitList splits a comma-separated flag value, dropping empty items.
func splitList(s string) []string {
	var out []string
	for item := range strings.SplitSeq(s, ",") {
		if item = strings.TrimSpace(item); item != "" {
			out = append(out, item)
		}
	}
	return out
}

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
